"""The group commit's rounds: the partitions a round's results wake join the next round together.

A round's fixed cost (its database round trips) is paid per round whatever its size, so rounds that split a
replica's partitions in two (one out of step, then the others) cost twice the round trips. The recorder here
stands in for the database: each round's first stage takes one real suspension, as a MongoDB call does, and
the first round waits until the test lets it go."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from mnemo.services.ingest.group_commit import GroupCommit
from mnemo.services.ingest.recorder import Finish


class RoundsRecorder:
    """Records what each round held; the first round waits for ``first_round``."""

    def __init__(self) -> None:
        self.rounds: list[list[str]] = []
        self.first_round = asyncio.Event()

    def prefetch(self, commands: Sequence[str]) -> None:
        return None

    async def begin(self, commands: Sequence[str], traceparents: Sequence[str | None], prefetched: object) -> Finish:
        self.rounds.append(list(commands))
        if len(self.rounds) == 1:
            await self.first_round.wait()
        await asyncio.sleep(0)  # the database's answer

        async def finish() -> list[str | None]:
            return [None] * len(commands)

        return finish

    def forget(self) -> None:
        pass


async def partition(commit: GroupCommit, name: str, batches: int) -> None:
    """A partition's consumer: each batch begins once the previous one's first stage is done."""
    for b in range(batches):
        await commit.begin([f"{name}{b}"], [None])


async def test_a_partition_woken_by_a_round_joins_the_partitions_queued_behind_it() -> None:
    recorder = RoundsRecorder()
    commit = GroupCommit(recorder, max_commands=100)  # type: ignore[arg-type]
    first = asyncio.create_task(partition(commit, "a", 2))
    while not recorder.rounds:  # a's first batch is being decided
        await asyncio.sleep(0)
    others = [asyncio.create_task(partition(commit, name, 2)) for name in "bcd"]
    for _ in range(3):  # b, c and d queue behind that round
        await asyncio.sleep(0)
    recorder.first_round.set()
    await asyncio.gather(first, *others)

    # Without the wait, a's second batch made a round of its own after b, c and d's first ones, and their second
    # batches another: a0 | b0 c0 d0 | a1 | b1 c1 d1.
    assert recorder.rounds == [["a0"], ["b0", "c0", "d0", "a1"], ["b1", "c1", "d1"]]


async def test_each_caller_reads_its_own_part_of_a_shared_round() -> None:
    recorder = RoundsRecorder()
    recorder.first_round.set()
    commit = GroupCommit(recorder, max_commands=100)  # type: ignore[arg-type]
    finishes = await asyncio.gather(commit.begin(["x", "y"], [None, None]), commit.begin(["z"], [None]))
    assert recorder.rounds == [["x", "y", "z"]]
    assert [len(await f()) for f in finishes] == [2, 1]
