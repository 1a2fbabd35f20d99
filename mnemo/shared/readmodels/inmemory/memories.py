"""In-memory fake of the memories read model (``ports.MemoriesPort``): the same folds, plain values."""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.shared.aggregates.conversation import as_utc
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import MEMORY_FORGOTTEN, MEMORY_REMEMBERED, MEMORY_UPDATED
from mnemo.shared.events.recorded.memories import MemorySnapshot
from mnemo.shared.mapping import mapped
from mnemo.shared.readmodels.memories import MemoryListing, MemoryQuery, MemoryView


class InMemoryMemories(MemoryListing):
    """``MemoriesReadModel`` in memory (port: ``MemoriesPort``)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], MemoryView] = {}  # (tenant, memory id) -> view

    async def apply(self, events: Sequence[EventEnvelope]) -> None:
        for env in events:
            key = (env.tenant_id, str(env.payload.get("memory_id")))
            if env.type == MEMORY_FORGOTTEN.name:
                self.rows.pop(key, None)
            elif env.type in (MEMORY_REMEMBERED.name, MEMORY_UPDATED.name):
                current = self.rows.get(key)
                fresh = env.type == MEMORY_REMEMBERED.name and current is None
                if fresh or (env.type == MEMORY_UPDATED.name and current is not None and current.version < env.version):
                    self.rows[key] = _view(env)

    async def by_ids(self, tenant_id: str, memory_ids: Sequence[str]) -> list[MemoryView]:
        return [self.rows[(tenant_id, i)] for i in dict.fromkeys(memory_ids) if (tenant_id, i) in self.rows]

    async def newest_of(self, q: MemoryQuery, limit: int) -> list[MemoryView]:
        found = sorted(filter(q.admits, self.rows.values()), key=lambda v: (-v.occurred_at.timestamp(), v.memory_id))
        return found[:limit]


def _view(env: EventEnvelope) -> MemoryView:
    s = MemorySnapshot.model_validate(env.payload)
    origin = str(env.payload.get("origin", "api"))
    return mapped(
        MemoryView, s, tenant_id=env.tenant_id, occurred_at=as_utc(s.occurred_at), version=env.version, origin=origin
    )
