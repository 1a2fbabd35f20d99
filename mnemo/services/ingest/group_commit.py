"""Group commit: the batches of every partition a replica holds, recorded together.

A replica holding many partitions would otherwise pay the recorder's per-batch round trips (the status lookup,
the outbox intent, the log insert, the read-model writes, the receipt) once per partition. Batches that arrive
while a round is being decided wait and join the next round, so under load one round carries the batches of all
partitions (up to ``max_commands``). Before each round the loop turns a few times, no timer, so the partitions
the previous round's results woke join it (``_gathered``): an idle replica adds no wait.

While a batch waits for its round, the statuses of its messages are read (``Recorder.prefetch``,
``statuses.py``): the round then decides without that read in its chain of round trips.

Order: a partition hands over its batches one at a time, in stream order (its consumer's first stage), so its
commands keep their order inside a round and from round to round; partitions never share a conversation, so how
their batches interleave does not matter. Each caller gets back the stage-2 call of its own commands: the first
caller to run a round's stage 2 runs it for all (once), the others await the same result and read their part. A
round that fails fails each of its batches, which their consumers retry.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from mnemo.services.ingest.domain import InboundCommand
from mnemo.services.ingest.recorder import Finish, Recorder
from mnemo.services.ingest.statuses import StatusRead

#: Loop turns a round waits at most for the batches its partitions are about to begin (``_gathered``).
GATHER_TURNS = 4


@dataclass
class _Waiting:
    commands: Sequence[InboundCommand]
    traceparents: Sequence[str | None]
    prefetched: StatusRead | None  # its messages' statuses, read while it waits for its round
    done: asyncio.Future[Finish] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class _Once:
    """A round's stage 2, run by whichever of its callers asks first; the reasons of all its commands."""

    def __init__(self, finish: Finish) -> None:
        self._finish = finish
        self._task: asyncio.Task[list[str | None]] | None = None

    async def __call__(self) -> list[str | None]:
        if self._task is None:
            self._task = asyncio.ensure_future(self._finish())
        return await asyncio.shield(self._task)


class GroupCommit:
    def __init__(self, recorder: Recorder, *, max_commands: int) -> None:
        self._recorder = recorder
        self._max = max_commands
        self._queue: list[_Waiting] = []
        self._rounds: asyncio.Task[None] | None = None

    def forget(self) -> None:
        """Drop what the recorder remembers of conversations (the partitions held changed hands)."""
        self._recorder.forget()

    async def begin(self, commands: Sequence[InboundCommand], traceparents: Sequence[str | None]) -> Finish:
        """Stage 1 of ``commands`` in the next round; the stage-2 call returning their refusal reasons."""
        waiting = _Waiting(commands, traceparents, self._recorder.prefetch(commands))
        self._queue.append(waiting)
        if self._rounds is None or self._rounds.done():
            self._rounds = asyncio.create_task(self._run_rounds())
        return await waiting.done

    async def _run_rounds(self) -> None:
        while await self._gathered():
            round_: list[_Waiting] = []
            size = 0
            while self._queue and (not round_ or size + len(self._queue[0].commands) <= self._max):
                size += len(self._queue[0].commands)
                round_.append(self._queue.pop(0))
            await self._run(round_)

    async def _gathered(self) -> bool:
        """Whether a round is due, once the partitions about to join it have: a round's results wake its callers,
        and each that has messages waiting begins its next batch within a loop turn or two. Taken at once, the
        next round held only what had queued meanwhile (one partition out of step) and the others made a round of
        their own after it: with 4 replicas, rounds of 3 batches then 1, over and over (31 rounds for 4,000
        messages where 19 did once it waited; each round costs the same round trips whatever its size: make
        bench-scale's ingest, 2026-11-27). A few turns of the loop, no timer: nothing waits for a partition that
        has nothing to begin."""
        for _ in range(GATHER_TURNS):
            await asyncio.sleep(0)
        return bool(self._queue)

    async def _run(self, round_: list[_Waiting]) -> None:
        commands = [c for w in round_ for c in w.commands]
        traces = [t for w in round_ for t in w.traceparents]
        reads = [w.prefetched for w in round_ if w.prefetched is not None]
        try:
            finish = _Once(await self._recorder.begin(commands, traces, reads))
        except BaseException as exc:
            for waiting in round_:
                if not waiting.done.done():
                    waiting.done.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        start = 0
        for waiting in round_:
            waiting.done.set_result(_part(finish, start, start + len(waiting.commands)))
            start += len(waiting.commands)


def _part(finish: _Once, start: int, end: int) -> Finish:
    async def own_reasons() -> list[str | None]:
        return (await finish())[start:end]

    return own_reasons
