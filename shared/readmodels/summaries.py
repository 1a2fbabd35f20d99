"""The ``summaries`` read model: one document per ``summary.created`` event, text encrypted at rest.

A projection of the log: rebuilt by replaying ``summary.created`` events. Applying is an upsert keyed by
``summary_id`` (itself deterministic over the range), so a redelivered or replayed event changes nothing
that matters. The text is encrypted with the tenant's data key, bound to the summary id and field name.
Every query takes the tenant first and filters on it: nothing crosses tenants.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pymongo import ASCENDING, DESCENDING, ReplaceOne
from pymongo.asynchronous.database import AsyncDatabase

from shared.crypto import FieldCipher
from shared.events.envelope import EventEnvelope
from shared.events.recorded import SummaryCreated

COLLECTION = "summaries"


@dataclass(frozen=True)
class SummaryView:
    summary_id: str
    tenant_id: str
    user_id: str
    conversation_id: str
    summary_type: str
    text: str
    importance: int
    participants: tuple[str, ...]
    start_at: datetime
    end_at: datetime
    message_ids: tuple[str, ...]
    first_index: int
    last_index: int
    method: str


class SummariesReadModel:
    def __init__(self, db: AsyncDatabase[dict[str, Any]], cipher: FieldCipher) -> None:
        self._col = db[COLLECTION]
        self._cipher = cipher

    async def ensure_indexes(self) -> None:
        await self._col.create_index(
            [
                ("tenant_id", ASCENDING),
                ("user_id", ASCENDING),
                ("conversation_id", ASCENDING),
                ("last_index", DESCENDING),
            ],
            name="by_conversation",
        )

    async def drop_all(self) -> None:
        """Forget the projection before a replay of the log; indexes are recreated."""
        await self._col.drop()
        await self.ensure_indexes()

    async def apply(self, events: Sequence[EventEnvelope]) -> None:
        """Upsert the summaries of ``summary.created`` events (others are ignored) in one bulk write."""
        ops: list[ReplaceOne[dict[str, Any]]] = []
        for env in events:
            if env.type != "summary.created":
                continue
            s = SummaryCreated.model_validate(env.payload)
            tc = await self._cipher.for_tenant(env.tenant_id)
            doc = {
                "_id": s.summary_id,
                "tenant_id": env.tenant_id,
                "event_id": env.event_id,
                **s.model_dump(exclude={"summary_id", "text"}),
                "text": tc.encrypt(s.summary_id, "text", s.text),
            }
            ops.append(ReplaceOne({"_id": s.summary_id, "tenant_id": env.tenant_id}, doc, upsert=True))
        if ops:
            await self._col.bulk_write(ops, ordered=False)

    async def recent_summaries(
        self, tenant_id: str, user_id: str, conversation_id: str, limit: int = 10
    ) -> list[SummaryView]:
        """The conversation's latest summaries, newest range first."""
        query = {"tenant_id": tenant_id, "user_id": user_id, "conversation_id": conversation_id}
        cursor = self._col.find(query).sort("last_index", DESCENDING).limit(limit)
        return [await self._view(d) async for d in cursor]

    async def by_ids(
        self,
        tenant_id: str,
        summary_ids: Sequence[str],
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
    ) -> list[SummaryView]:
        """The summaries among ``summary_ids`` that belong to the tenant (and user/conversation if given)."""
        if not summary_ids:
            return []
        query: dict[str, Any] = {"tenant_id": tenant_id, "_id": {"$in": list(summary_ids)}}
        if user_id is not None:
            query["user_id"] = user_id
        if conversation_id is not None:
            query["conversation_id"] = conversation_id
        found = {d["_id"]: await self._view(d) async for d in self._col.find(query)}
        return [found[i] for i in summary_ids if i in found]

    async def _view(self, d: dict[str, Any]) -> SummaryView:
        tc = await self._cipher.for_tenant(d["tenant_id"])
        return SummaryView(
            summary_id=d["_id"],
            tenant_id=d["tenant_id"],
            user_id=d["user_id"],
            conversation_id=d["conversation_id"],
            summary_type=d["summary_type"],
            text=str(tc.decrypt(d["_id"], "text", d["text"])),
            importance=int(d["importance"]),
            participants=tuple(d.get("participants", ())),
            start_at=d["start_at"],
            end_at=d["end_at"],
            message_ids=tuple(d.get("message_ids", ())),
            first_index=int(d["first_index"]),
            last_index=int(d["last_index"]),
            method=d["method"],
        )
