"""In-memory fake of the knowledge read model (``ports.KnowledgePort``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC

from mnemo.shared.aggregates.knowledge import ACTIVE, fact_folds
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    FACT_LEARNED,
    FACT_RETIRED,
    FACTS_CONSOLIDATED,
    FactLearned,
    FactScopeChanged,
)
from mnemo.shared.mapping import mapped
from mnemo.shared.readmodels.dispatch import apply_each
from mnemo.shared.readmodels.knowledge import (
    FactQueries,
    FactRows,
    FactView,
    source_key,
    with_supersession,
)


class InMemoryKnowledge(FactQueries):
    """``KnowledgeReadModel`` in memory (port: ``KnowledgePort``)."""

    def __init__(self) -> None:
        self.facts: dict[str, FactView] = {}
        self.scope_version: dict[str, int] = {}
        self.positions: dict[tuple[str, str], int] = {}  # (tenant, stream) -> version applied through

    async def apply(self, events: Sequence[EventEnvelope]) -> None:
        apply_each(self, events, _APPLY)

    def _on_learned(self, env: EventEnvelope) -> None:
        self._insert(env, FACT_LEARNED.parse(env.payload), [])

    def _on_consolidated(self, env: EventEnvelope) -> None:
        merged = FACTS_CONSOLIDATED.parse(env.payload)
        folded = [f for i in merged.consolidates if (f := self._mine(env.tenant_id, i)) is not None]
        self._insert(env, merged, [k for f in folded for k in f.source_keys])
        for f in folded:
            if f.status == ACTIVE:
                self.facts[f.fact_id] = replace(f, status="consolidated")

    def _on_retired(self, env: EventEnvelope) -> None:
        r = FACT_RETIRED.parse(env.payload)
        if (f := self._mine(env.tenant_id, r.fact_id)) is not None:
            self.facts[f.fact_id] = replace(f, status="retired")

    def _on_scope_changed(self, env: EventEnvelope) -> None:
        c = FactScopeChanged.model_validate(env.payload)  # the fields both promotion events share
        f = self._mine(env.tenant_id, c.fact_id)
        if f is not None and self.scope_version[f.fact_id] < env.version:
            self.facts[f.fact_id] = replace(f, scope=c.to_scope)
            self.scope_version[f.fact_id] = env.version

    def _mine(self, tenant_id: str, fact_id: str) -> FactView | None:
        f = self.facts.get(fact_id)
        return f if f is not None and f.tenant_id == tenant_id else None

    def _insert(self, env: EventEnvelope, fact: FactLearned, extra_keys: list[str]) -> None:
        if fact.fact_id in self.facts:
            return
        keys = [source_key(fact.conversation_id, m) for m in fact.message_ids] + extra_keys
        learned = fact.learned_at if fact.learned_at.tzinfo is not None else fact.learned_at.replace(tzinfo=UTC)
        self.facts[fact.fact_id] = mapped(
            FactView,
            fact,
            tenant_id=env.tenant_id,
            learned_at=learned.astimezone(UTC),
            status=ACTIVE,
            causation_id=env.causation_id,
            consolidates=getattr(fact, "consolidates", ()),
            source_keys=tuple(dict.fromkeys(keys)),
        )
        self.scope_version[fact.fact_id] = env.version

    def _of(self, tenant_id: str) -> list[FactView]:
        return [f for f in self.facts.values() if f.tenant_id == tenant_id]

    async def rows(self, q: FactRows) -> list[FactView]:
        return [f for f in self.facts.values() if q.admits(f)]

    async def rows_page(self, q: FactRows, offset: int, limit: int) -> tuple[list[FactView], int]:
        found = sorted(await self.rows(q), key=lambda f: (f.learned_at, f.fact_id), reverse=True)
        return found[offset : offset + limit], len(found)

    async def in_conversation(self, tenant_id: str, user_id: str, conversation_id: str) -> list[FactView]:
        mine = [f for f in self._of(tenant_id) if f.user_id == user_id and f.conversation_id == conversation_id]
        return with_supersession(mine)

    async def caught_up(self, tenant_id: str, streams: Sequence[str]) -> dict[str, int]:
        return {s: self.positions.get((tenant_id, s), 0) for s in streams}

    async def mark_caught_up(self, tenant_id: str, versions: Mapping[str, int]) -> None:
        for s, v in versions.items():
            self.positions[(tenant_id, s)] = max(v, self.positions.get((tenant_id, s), 0))

    async def by_id(self, tenant_id: str, fact_id: str) -> FactView | None:
        return self._mine(tenant_id, fact_id)

    async def by_ids(self, tenant_id: str, fact_ids: Sequence[str]) -> list[FactView]:
        return [f for i in fact_ids if (f := self._mine(tenant_id, i)) is not None]

    async def scope_versions(self, tenant_id: str, fact_ids: Sequence[str]) -> dict[str, int]:
        return {i: self.scope_version[i] for i in fact_ids if self._mine(tenant_id, i) is not None}

    async def derived_from(self, tenant_id: str, user_id: str, conversation_id: str, message_id: str) -> list[FactView]:
        key = source_key(conversation_id, message_id)
        return [f for f in self._of(tenant_id) if f.user_id == user_id and key in f.source_keys and f.status == ACTIVE]


# Event type -> how ``InMemoryKnowledge.apply`` folds it (the rules of ``knowledge.KnowledgeReadModel``).
_APPLY: dict[str, Callable[[InMemoryKnowledge, EventEnvelope], None]] = fact_folds(
    learned=InMemoryKnowledge._on_learned,
    consolidated=InMemoryKnowledge._on_consolidated,
    retired=InMemoryKnowledge._on_retired,
    scope_changed=InMemoryKnowledge._on_scope_changed,
)
