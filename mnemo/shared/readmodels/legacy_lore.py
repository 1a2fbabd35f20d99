"""The legacy-lore read model: one document per ``legacy_memory`` entry a user made from a memory.

A projection of the ``legacy_lore/<tenant>/<user>/<legacy>`` streams, rebuilt by ``mnemo replay``:

- ``legacy_lore.created`` inserts the entry (``$setOnInsert``, keyed by the legacy id, itself deterministic
  over tenant, user and memory): re-applying it never overwrites anything, in particular not a deletion.
- ``legacy_lore.deleted`` marks the entry deleted and drops its user text from the projection (the log keeps
  the encrypted event). Deleted entries are never returned.

Writes are ordered, so a stream applied in version order ends in its last state. The text, title and
emotional tags are encrypted with the tenant's data key, bound to the legacy id and field name. Every query
takes the tenant and the user first and filters on both: nothing crosses tenants or users.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from pymongo import ASCENDING, DESCENDING, UpdateOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase

from mnemo.shared.aggregates.conversation import as_utc
from mnemo.shared.crypto import FieldCipher
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import LEGACY_LORE_CREATED, LEGACY_LORE_DELETED
from mnemo.shared.readmodels.dispatch import write_ops
from mnemo.shared.readmodels.erased import readable
from mnemo.shared.readmodels.repository import _bulk

COLLECTION = "rm_legacy_lore"
ENCRYPTED = ("title", "text", "emotional_tags")
Doc = dict[str, Any]
#: The listing order: newest end first, then id (a total order, so pages neither skip nor repeat).
ORDER = [("end_at", DESCENDING), ("_id", ASCENDING)]


@dataclass(frozen=True)
class LegacyLoreView:
    legacy_id: str
    tenant_id: str
    user_id: str
    memory_id: str
    conversation_id: str
    title: str | None
    text: str
    participants: tuple[str, ...]
    start_at: datetime
    end_at: datetime
    importance: int
    emotional_tags: tuple[str, ...]
    applies_to_bots: tuple[str, ...]
    applies_to_personas: tuple[str, ...]
    summary_type: str
    method: str
    prompt_version: str | None
    message_ids: tuple[str, ...] = ()  # what the memory was derived from (empty: recorded before the field)

    @property
    def applies_to(self) -> tuple[str, ...]:
        return tuple(sorted({*self.applies_to_bots, *self.applies_to_personas}))


def live(tenant_id: str, user_id: str) -> Doc:
    """The MongoDB filter of a user's live (not deleted) entries."""
    return {"tenant_id": tenant_id, "user_id": user_id, "deleted": False}


@dataclass(frozen=True)
class LegacyPage:
    """Which of a user's live entries the memory listing reads, in the two forms the adapters need: a MongoDB
    filter (``LegacyLoreReadModel``) and a test on a view (the in-memory fake), side by side so they cannot drift."""

    tenant_id: str
    user_id: str
    bot_id: str | None = None  # applies to that bot or names it as a participant
    conversation_id: str | None = None  # made from that conversation's summaries

    def filter(self) -> Doc:
        query = live(self.tenant_id, self.user_id)
        if self.bot_id is not None:
            query["$or"] = [{"applies_to": self.bot_id}, {"participants": self.bot_id}]
        if self.conversation_id is not None:
            query["conversation_id"] = self.conversation_id
        return query

    def admits(self, v: LegacyLoreView) -> bool:
        return (
            (v.tenant_id, v.user_id) == (self.tenant_id, self.user_id)
            and (self.bot_id is None or self.bot_id in v.applies_to or self.bot_id in v.participants)
            and self.conversation_id in (None, v.conversation_id)
        )


class LegacyPages(Protocol):
    """The memory listing's query, stated once over what each adapter answers for a :class:`LegacyPage`."""

    async def listed(self, q: LegacyPage, offset: int, limit: int) -> tuple[list[LegacyLoreView], int]:
        """The live entries ``q`` admits, newest ``end_at`` first then id (``ORDER``), and how many."""
        ...


class LegacyLoreReadModel(LegacyPages):
    def __init__(self, db: AsyncDatabase[Doc], cipher: FieldCipher) -> None:
        self._col: AsyncCollection[Doc] = db.get_collection(COLLECTION)
        self._cipher = cipher

    async def apply(self, events: Sequence[EventEnvelope]) -> None:
        """Project ``legacy_lore.*`` events (others are ignored), in order, in one bulk write."""
        await _bulk(self._col, await write_ops(self, events, _APPLY), ordered=True)

    async def _deleted(self, env: EventEnvelope) -> UpdateOne:
        d = LEGACY_LORE_DELETED.parse(env.payload)
        return UpdateOne(
            {"_id": d.legacy_id, "tenant_id": env.tenant_id},
            {"$set": {"deleted": True, "deleted_at": d.deleted_at}, "$unset": dict.fromkeys(ENCRYPTED, "")},
        )

    async def _created(self, env: EventEnvelope) -> UpdateOne:
        c = LEGACY_LORE_CREATED.parse(env.payload)
        tc = await self._cipher.for_tenant(env.tenant_id, c.user_id)
        plain = c.model_dump(exclude={"legacy_id", *ENCRYPTED})
        doc: Doc = {
            "tenant_id": env.tenant_id,
            "event_id": env.event_id,
            **plain,
            "applies_to": sorted({*c.applies_to_bots, *c.applies_to_personas}),
            "deleted": False,
            **{f: tc.encrypt(c.legacy_id, f, getattr(c, f)) for f in ENCRYPTED if getattr(c, f) is not None},
        }
        return UpdateOne({"_id": c.legacy_id, "tenant_id": env.tenant_id}, {"$setOnInsert": doc}, upsert=True)

    async def by_ids(self, tenant_id: str, ids: Sequence[str], *, user_id: str) -> list[LegacyLoreView]:
        """The live entries among ``ids`` that belong to this tenant and user, in the order asked."""
        if not ids:
            return []
        query = live(tenant_id, user_id) | {"_id": {"$in": list(ids)}}
        found = {v.legacy_id: v for v in await readable(self._col.find(query), self._view)}
        return [found[i] for i in ids if i in found]

    async def for_memories(
        self, tenant_id: str, memory_ids: Sequence[str], *, user_id: str | None = None
    ) -> dict[str, LegacyLoreView]:
        """The live entry made from each of ``memory_ids`` (memories not converted are absent)."""
        if not memory_ids:
            return {}
        query: Doc = {"tenant_id": tenant_id, "deleted": False, "memory_id": {"$in": list(memory_ids)}}
        if user_id is not None:
            query["user_id"] = user_id
        return {v.memory_id: v for v in await readable(self._col.find(query), self._view)}

    async def deleted(self, tenant_id: str, legacy_ids: Sequence[str]) -> set[str]:
        """Those of ``legacy_ids`` the tenant's projection shows deleted (the embedding service skips a late
        redelivered creation of them)."""
        if not legacy_ids:
            return set()
        query = {"tenant_id": tenant_id, "_id": {"$in": list(legacy_ids)}, "deleted": True}
        return {str(d["_id"]) async for d in self._col.find(query, {"_id": 1})}

    async def converted_memory_ids(self, tenant_id: str, user_id: str) -> list[str]:
        """Every memory of this user that has a live legacy entry (for the `converted_to_lore` filter)."""
        cursor = self._col.find(live(tenant_id, user_id), {"memory_id": 1})
        return [d["memory_id"] async for d in cursor]

    async def listed(self, q: LegacyPage, offset: int, limit: int) -> tuple[list[LegacyLoreView], int]:
        query = q.filter()
        total = await self._col.count_documents(query)
        if limit <= 0 or offset >= total:
            return [], total
        cursor = self._col.find(query).sort(ORDER).skip(offset).limit(limit)
        return await readable(cursor, self._view), total

    async def _view(self, d: Doc) -> LegacyLoreView:
        tc = await self._cipher.for_tenant(d["tenant_id"], reading=(d,))

        def plain(field: str) -> Any:
            return tc.decrypt(d["_id"], field, d[field]) if d.get(field) is not None else None

        return LegacyLoreView(
            legacy_id=d["_id"],
            tenant_id=d["tenant_id"],
            user_id=d["user_id"],
            memory_id=d["memory_id"],
            conversation_id=d["conversation_id"],
            title=plain("title"),
            text=str(plain("text") or ""),
            participants=tuple(d.get("participants", ())),
            start_at=as_utc(d["start_at"]),
            end_at=as_utc(d["end_at"]),
            importance=int(d["importance"]),
            emotional_tags=tuple(plain("emotional_tags") or ()),
            applies_to_bots=tuple(d.get("applies_to_bots", ())),
            applies_to_personas=tuple(d.get("applies_to_personas", ())),
            summary_type=d["summary_type"],
            method=d["method"],
            prompt_version=d.get("prompt_version"),
            message_ids=tuple(d.get("message_ids", ())),
        )


# Event type -> the write ``LegacyLoreReadModel.apply`` makes of it.
_APPLY: dict[str, Callable[[LegacyLoreReadModel, EventEnvelope], Awaitable[UpdateOne]]] = {
    LEGACY_LORE_CREATED.name: LegacyLoreReadModel._created,
    LEGACY_LORE_DELETED.name: LegacyLoreReadModel._deleted,
}
