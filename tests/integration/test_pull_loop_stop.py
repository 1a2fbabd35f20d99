"""A pull loop's stop is bounded by its caller: ingest's partition dealing lets a partition go with
``wait_for(loop.stop(), ack_wait)`` and, when a batch does not finish in time, leaves its lease to expire while the
batch completes. A stop that swallowed its own cancellation cancelled the batch in the middle instead and reported
a clean stop, so the lease was released at once to another replica while the cut-short batch's writes had not
been settled."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

import nats
import pytest

from mnemo.shared.delivery import Item, Rejection
from mnemo.shared.delivery.pull import PullLoop, durable_config
from mnemo.shared.settings import DeliverySettings
from tests.integration.batches import bytes_consumer

pytestmark = pytest.mark.integration


async def test_a_stop_cut_short_by_its_caller_returns_while_a_batch_is_stuck(nats_url: str) -> None:
    tag = uuid.uuid4().hex[:8]
    started, release = asyncio.Event(), asyncio.Event()

    async def handle(items: list[Item[bytes]]) -> list[Rejection]:
        started.set()
        await release.wait()  # a batch that does not finish (a database that does not answer)
        return []

    delivery = DeliverySettings(batch_size=8, ack_wait_s=30.0, max_deliver=3)
    consumer = bytes_consumer(nats_url, f"stop-{tag}", handle, delivery)
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    await js.add_stream(name=f"STOP_{tag}", subjects=[f"stop.{tag}.>"])
    loop = PullLoop(nc, f"STOP_{tag}", durable_config(f"stop_{tag}", f"stop.{tag}.>", delivery), consumer, batch_size=8)
    try:
        await loop.start()
        await js.publish(f"stop.{tag}.x", b"one")
        await asyncio.wait_for(started.wait(), 20)

        with pytest.raises(TimeoutError):
            await asyncio.wait_for(loop.stop(), 0.5)
    finally:
        release.set()
        await asyncio.wait_for(loop.stop(), 20)  # once the batch finishes, a stop completes
        await nc.drain()


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(400):
        if condition():
            return
        await asyncio.sleep(0.05)


async def _waiting(js: nats.js.JetStreamContext, stream: str, durable: str, want: int) -> int:
    """The durable's open pull requests, once they number ``want`` (or what they number after 20 s)."""
    for _ in range(200):
        waiting = (await js.consumer_info(stream, durable)).num_waiting or 0
        if waiting == want:
            break
        await asyncio.sleep(0.1)
    return waiting


async def test_a_stop_leaves_no_pull_request_behind_and_the_next_holder_gets_what_follows(nats_url: str) -> None:
    """An idle partition's pull request may stay open for seconds (its expiry doubles while nothing comes): a
    stop does not wait for it but unsubscribes its inbox, and the server drops it, so nothing published after the
    stop is delivered to the stopped loop; the partition's next holder (``resume``) gets it."""
    tag = uuid.uuid4().hex[:8]
    stream, durable = f"IDLE_{tag}", f"idle_{tag}"
    got: dict[str, list[bytes]] = {"first": [], "second": []}

    def handler(name: str) -> Callable[[list[Item[bytes]]], Awaitable[list[Rejection]]]:
        async def handle(items: list[Item[bytes]]) -> list[Rejection]:
            got[name] += [i.value for i in items]
            return []

        return handle

    delivery = DeliverySettings(batch_size=8, ack_wait_s=30.0, max_deliver=3)
    config = durable_config(durable, f"idle.{tag}.>", delivery)
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    await js.add_stream(name=stream, subjects=[f"idle.{tag}.>"])
    first = PullLoop(nc, stream, config, bytes_consumer(nats_url, f"a-{tag}", handler("first"), delivery),
                     batch_size=8, idle_wait_s=30.0)  # fmt: skip
    second = PullLoop(nc, stream, config, bytes_consumer(nats_url, f"b-{tag}", handler("second"), delivery),
                      batch_size=8, idle_wait_s=0.2, max_idle_wait_s=0.8)  # fmt: skip
    try:
        await first.start(resume=True)
        await js.publish(f"idle.{tag}.x", b"one")
        await _until(lambda: bool(got["first"]))
        assert await _waiting(js, stream, durable, 1) == 1, "the first loop pulls again, for 30 s"
        await asyncio.wait_for(first.stop(), 20)
        assert await _waiting(js, stream, durable, 0) == 0, "its request is gone with its inbox"
        await js.publish(f"idle.{tag}.x", b"two")
        await second.start(resume=True)
        await asyncio.sleep(2.0)  # idle: its requests expire and the next ones wait longer
        await js.publish(f"idle.{tag}.x", b"three")
        await _until(lambda: len(got["second"]) >= 2)
        assert got == {"first": [b"one"], "second": [b"two", b"three"]}
    finally:
        await asyncio.wait_for(first.stop(), 20)
        await asyncio.wait_for(second.stop(), 20)
        await nc.drain()
