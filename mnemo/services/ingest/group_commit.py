"""Group commit: the batches of every partition a replica holds, recorded together.

A replica holding many partitions would otherwise pay the recorder's per-batch round trips (the status lookup,
the outbox intent, the log insert, the read-model writes, the receipt) once per partition. Batches that arrive
while a round is being decided wait and join the next round, so under load one round carries the batches of all
partitions (up to ``max_commands``), and an idle replica adds no wait at all.

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


@dataclass
class _Waiting:
    commands: Sequence[InboundCommand]
    traceparents: Sequence[str | None]
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
        waiting = _Waiting(commands, traceparents)
        self._queue.append(waiting)
        if self._rounds is None or self._rounds.done():
            self._rounds = asyncio.create_task(self._run_rounds())
        return await waiting.done

    async def _run_rounds(self) -> None:
        while self._queue:
            round_: list[_Waiting] = []
            size = 0
            while self._queue and (not round_ or size + len(self._queue[0].commands) <= self._max):
                size += len(self._queue[0].commands)
                round_.append(self._queue.pop(0))
            await self._run(round_)

    async def _run(self, round_: list[_Waiting]) -> None:
        commands = [c for w in round_ for c in w.commands]
        traces = [t for w in round_ for t in w.traceparents]
        try:
            finish = _Once(await self._recorder.begin(commands, traces))
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
