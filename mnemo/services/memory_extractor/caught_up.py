"""The knowledge read model brought up to the log before a decision is made on it.

Learning, folding and changes by hand decide on the read model (which facts a character knows) and append at a
stream version, so that a writer who appended meanwhile makes the append conflict. That guard holds only if the
read model already holds every event up to that version. The version read from the store alone does not
promise it: a writer projects its events only after its append, so in between the log is ahead of the read
model, and a replica that read the version then decided on facts that missed the other's (two replicas learned
"Ana lives in Paris." twice; CI, 2026-11-28). So the version a decision appends at is the one the read model has
been brought to here: the stream's events past the position known to be applied, applied (idempotently: the
other writer's own projection may come after).

Positions only grow and any true one is a lower bound of the next, so each process keeps those it knows in
memory and reads the recorded one (``knowledge_positions``) only for a stream it has not seen; it records
its own only every :data:`RECORD_EVERY` versions, which is all a restarted process reads again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mnemo.shared.eventlog.port import AppendResult, EventStore
from mnemo.shared.readmodels.ports import KnowledgePort

#: How far a stream's position moves in this process before it is recorded for the next process.
RECORD_EVERY = 100
#: Streams whose position a process remembers (a bounded cache: one forgotten is read from the record again).
REMEMBERED = 100_000


class ReadModelCatchUp:
    """One process's positions in the knowledge streams, and the catch-up that moves them."""

    def __init__(self, store: EventStore, knowledge: KnowledgePort) -> None:
        self._store, self._knowledge = store, knowledge
        self._known: dict[str, int] = {}  # stream -> version the read model holds every event through
        self._recorded: dict[str, int] = {}  # stream -> the position last recorded (or read from the record)

    async def at_log(self, tenant_id: str, streams: Sequence[str]) -> dict[str, int]:
        """Apply each stream's events past its position; per stream, the version the read model now holds every
        event through (the version to append a decision made on it at)."""
        if len(self._known) > REMEMBERED:
            self._known.clear()
            self._recorded.clear()
        if unseen := [s for s in streams if s not in self._known]:
            recorded = await self._knowledge.caught_up(tenant_id, unseen)
            self._known.update(recorded)
            self._recorded.update(recorded)
        for stream in streams:
            if tail := await self._store.read_stream(stream, self._known[stream]):
                await self._knowledge.apply(tail)
                self._moved(stream, tail[-1].version)
        await self._record(tenant_id, streams)
        return {s: self._known[s] for s in streams}

    async def appended(self, tenant_id: str, results: Iterable[AppendResult]) -> None:
        """After appends made at the versions :meth:`at_log` returned, and projected: their streams are caught up
        through them, so the next decision does not read them back. Not a stream where an event of the append
        was already in the log: another writer's copy of it, which that writer may not have projected yet."""
        moved = [r for r in results if r.committed and not r.duplicates]
        for r in moved:
            self._moved(r.stream_id, r.version)
        await self._record(tenant_id, [r.stream_id for r in moved])

    def _moved(self, stream: str, version: int) -> None:
        # Batches of one process catch up at once: of two true positions the higher holds, never move back.
        self._known[stream] = max(version, self._known.get(stream, 0))

    async def _record(self, tenant_id: str, streams: Iterable[str]) -> None:
        due = {s: self._known[s] for s in streams if self._known[s] - self._recorded.get(s, 0) >= RECORD_EVERY}
        if due:
            await self._knowledge.mark_caught_up(tenant_id, due)
            self._recorded.update(due)
