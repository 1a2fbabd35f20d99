"""Erasures waiting at the same time share one pass over the streams, and none is served by a pass that
started before it asked (that pass may already have gone by its messages)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest

from mnemo.services.privacy.stream_purge import SharedPasses

Match = Callable[[bytes], bool]


def takes(marker: bytes) -> Match:
    return lambda body: marker in body


class Streams:
    """A stream of bodies; a pass deletes what a matcher takes. ``gate`` holds a pass until released."""

    def __init__(self, bodies: list[bytes]) -> None:
        self.bodies = bodies
        self.gate = asyncio.Event()
        self.gate.set()
        self.seen: list[int] = []  # how many matchers each pass had

    async def run_pass(self, matches: Sequence[Match]) -> list[int]:
        self.seen.append(len(matches))
        await self.gate.wait()
        counts = [0] * len(matches)
        kept = []
        for body in self.bodies:
            taker = next((i for i, m in enumerate(matches) if m(body)), None)
            if taker is None:
                kept.append(body)
            else:
                counts[taker] += 1
        self.bodies = kept
        return counts


async def test_erasures_asking_during_a_pass_share_the_next_one() -> None:
    streams = Streams([b"alice-1", b"bob-1", b"carol-1", b"dave-1", b"bob-2", b"erin-1"])
    passes = SharedPasses(streams.run_pass)
    streams.gate.clear()
    first = asyncio.create_task(passes.purge(takes(b"alice")))
    await asyncio.sleep(0)
    later = [asyncio.create_task(passes.purge(takes(name))) for name in (b"bob", b"carol", b"dave")]
    await asyncio.sleep(0)
    streams.gate.set()
    assert await first == 1
    assert [await t for t in later] == [2, 1, 1]
    assert streams.seen == [1, 3], "one pass for alice, one shared by the three who asked during it"
    assert streams.bodies == [b"erin-1"]


async def test_a_message_published_during_a_pass_is_found_for_who_asked_after_it_began() -> None:
    streams = Streams([b"alice-1"])
    passes = SharedPasses(streams.run_pass)
    streams.gate.clear()
    first = asyncio.create_task(passes.purge(takes(b"alice")))
    await asyncio.sleep(0)
    streams.bodies.append(b"bob-1")  # bob's message arrives, then bob's erasure asks
    bob = asyncio.create_task(passes.purge(takes(b"bob")))
    await asyncio.sleep(0)
    streams.gate.set()
    assert (await first, await bob) == (1, 1)
    assert passes.passes == 2


async def test_a_failed_pass_fails_its_waiters_and_the_next_pass_runs() -> None:
    calls = 0

    async def flaky(matches: Sequence[Match]) -> list[int]:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0)
        if calls == 1:
            raise ConnectionError("NATS went away")
        return [7] * len(matches)

    passes = SharedPasses(flaky)
    first = asyncio.create_task(passes.purge(takes(b"a")))
    await asyncio.sleep(0)
    second = asyncio.create_task(passes.purge(takes(b"b")))
    with pytest.raises(ConnectionError):
        await first
    assert await second == 7
    assert await passes.purge(takes(b"c")) == 7, "a new pass starts once the runner is idle"


async def test_a_cancelled_runner_leaves_nobody_waiting() -> None:
    streams = Streams([b"alice-1"])
    streams.gate.clear()
    passes = SharedPasses(streams.run_pass)
    first = asyncio.create_task(passes.purge(takes(b"alice")))
    await asyncio.sleep(0)
    second = asyncio.create_task(passes.purge(takes(b"bob")))
    await asyncio.sleep(0)
    assert passes._runner is not None
    passes._runner.cancel()
    for task in (first, second):
        with pytest.raises(asyncio.CancelledError):
            await task
