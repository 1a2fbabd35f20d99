"""In-memory fake of the summaries read model (``ports.SummariesPort``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import EVERYONE, SUMMARY_CREATED, SUMMARY_RETIRED
from mnemo.shared.readmodels.dispatch import apply_each
from mnemo.shared.readmodels.inmemory.conversation import naive_utc
from mnemo.shared.readmodels.summaries import (
    SummaryListed,
    SummaryPage,
    SummaryPages,
    SummaryScope,
    SummaryView,
    summary_view,
)


class InMemorySummaries(SummaryPages):
    """``SummariesReadModel`` in memory (port: ``SummariesPort``)."""

    def __init__(self) -> None:
        self.docs: dict[str, dict[str, Any]] = {}  # summary id -> fields (no "text" while a retirement stub)

    async def apply(self, events: Sequence[EventEnvelope]) -> None:
        apply_each(self, events, _APPLY)

    def _on_created(self, env: EventEnvelope) -> None:
        s = SUMMARY_CREATED.parse(env.payload)
        doc = self.docs.get(s.summary_id)
        if doc is not None and doc["tenant_id"] != env.tenant_id:
            return  # another tenant's id: the adapter's upsert fails on _id
        fields = {
            "tenant_id": env.tenant_id,
            **s.model_dump(exclude={"summary_id"}),
            "cited_message_ids": s.cited_message_ids(),
        }
        fields["start_at"] = naive_utc(s.start_at)
        fields["end_at"] = naive_utc(s.end_at)
        if doc is None:
            self.docs[s.summary_id] = {**fields, "status": "active", "replaced_by": None}
        else:
            doc.update(fields)

    def _on_retired(self, env: EventEnvelope) -> None:
        r = SUMMARY_RETIRED.parse(env.payload)
        doc = self.docs.setdefault(r.summary_id, {"tenant_id": env.tenant_id})
        if doc["tenant_id"] == env.tenant_id:
            doc.update(status=r.reason, replaced_by=r.replaced_by)

    @staticmethod
    def _view(summary_id: str, d: dict[str, Any]) -> SummaryView:
        return summary_view(summary_id, d, str(d["text"]), d.get("emotional_context"))

    def _created(self, tenant_id: str) -> list[tuple[str, dict[str, Any]]]:
        return [(i, d) for i, d in self.docs.items() if d["tenant_id"] == tenant_id and "text" in d]

    async def recent_summaries(
        self, tenant_id: str, user_id: str, conversation_id: str, limit: int = 10
    ) -> list[SummaryView]:
        mine = [
            (i, d)
            for i, d in self._created(tenant_id)
            if (d["user_id"], d["conversation_id"]) == (user_id, conversation_id)
        ]
        mine.sort(key=lambda p: -int(p[1]["last_index"]))
        return [self._view(i, d) for i, d in mine[:limit]]

    async def of_ids(self, summary_ids: Sequence[str], scope: SummaryScope) -> list[SummaryView]:
        return [self._view(i, d) for i in summary_ids if (d := self.docs.get(i)) is not None and scope.admits(d)]

    async def inactive(self, tenant_id: str, summary_ids: Sequence[str]) -> set[str]:
        return {
            i
            for i in summary_ids
            if (d := self.docs.get(i)) is not None and d["tenant_id"] == tenant_id and d.get("status") != "active"
        }

    async def live_summaries(
        self, tenant_id: str, user_id: str, conversation_id: str, *, audience_member: str | None = None
    ) -> list[SummaryView]:
        live = [
            (i, d)
            for i, d in self._created(tenant_id)
            if (d["user_id"], d["conversation_id"]) == (user_id, conversation_id)
            and d.get("status") == "active"
            and (audience_member is None or {audience_member, EVERYONE} & set(d.get("audience", ())))
        ]
        live.sort(key=lambda p: (int(p[1]["first_index"]), p[0]))
        return [self._view(i, d) for i, d in live]

    async def listed(self, q: SummaryPage, offset: int, limit: int) -> tuple[list[SummaryListed], int]:
        found = [(i, d) for i, d in self.docs.items() if q.admits(i, d)]
        if limit <= 0 or offset >= len(found):
            return [], len(found)
        found.sort(key=lambda p: p[0])
        found.sort(key=lambda p: p[1]["end_at"], reverse=True)
        return [
            SummaryListed(self._view(i, d), str(d.get("status") or "active"), d.get("prompt_version"))
            for i, d in found[offset : offset + limit]
        ], len(found)


# Event type -> how ``InMemorySummaries.apply`` folds it (the rules of ``summaries.SummariesReadModel``).
_APPLY: dict[str, Callable[[InMemorySummaries, EventEnvelope], None]] = {
    SUMMARY_CREATED.name: InMemorySummaries._on_created,
    SUMMARY_RETIRED.name: InMemorySummaries._on_retired,
}
