"""The ``witnessed`` read model: which character was present for which message.

One document per (tenant, character, message), built from ``knowledge.witnessed`` events and rebuilt by
replaying them. ``_id`` is the event's deterministic id and the upsert is keyed on it, so applying an
event twice is a no-op. No user text is stored here. Every query takes the tenant first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pymongo import ASCENDING, UpdateOne
from pymongo.asynchronous.database import AsyncDatabase

from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import MESSAGES_WITNESSED

COLLECTION = "witnessed"


@dataclass(frozen=True)
class WitnessedRows:
    """Which rows a query reads, in the two forms the adapters need: a MongoDB filter and a test on a row."""

    tenant_id: str
    character_id: str
    user_id: str | None = None
    conversation_id: str | None = None
    message_ids: frozenset[str] | None = None  # only these

    def filter(self) -> dict[str, Any]:
        query: dict[str, Any] = {"tenant_id": self.tenant_id, "character_id": self.character_id}
        if self.user_id is not None:
            query["user_id"] = self.user_id
        if self.conversation_id is not None:
            query["conversation_id"] = self.conversation_id
        if self.message_ids is not None:
            query["message_id"] = {"$in": sorted(self.message_ids)}
        return query

    def admits(self, row: Mapping[str, Any]) -> bool:
        return (
            (row["tenant_id"], row["character_id"]) == (self.tenant_id, self.character_id)
            and self.user_id in (None, row["user_id"])
            and self.conversation_id in (None, row["conversation_id"])
            and (self.message_ids is None or row["message_id"] in self.message_ids)
        )


class WitnessedPort(Protocol):
    """What the extractor calls on the read model; adapters: ``WitnessedReadModel`` and the in-memory fake
    (``mnemo.shared.readmodels.inmemory.witnessed``), both run through ``tests/contract/test_readmodels_contract.py``.
    The queries are stated here once, over the one read each adapter answers: ``witnessed``."""

    async def apply(self, events: Sequence[EventEnvelope]) -> None: ...

    async def witnessed(self, q: WitnessedRows, limit: int | None) -> list[str]:
        """The message ids of the first ``limit`` rows ``q`` admits, by user, conversation and index."""
        ...

    async def witnesses(self, tenant_id: str, character_id: str, message_ids: Sequence[str]) -> set[str]:
        """The subset of ``message_ids`` the character witnessed."""
        if not message_ids:
            return set()
        return set(
            await self.witnessed(WitnessedRows(tenant_id, character_id, message_ids=frozenset(message_ids)), None)
        )

    async def known_message_ids(
        self,
        tenant_id: str,
        character_id: str,
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
        limit: int | None = None,
    ) -> list[str]:
        """Message ids the character witnessed (optionally in one user's conversation), oldest first."""
        found = await self.witnessed(WitnessedRows(tenant_id, character_id, user_id, conversation_id), limit)
        return list(dict.fromkeys(found))


class WitnessedReadModel(WitnessedPort):
    def __init__(self, db: AsyncDatabase[dict[str, Any]]) -> None:
        self._col = db[COLLECTION]

    async def apply(self, events: Sequence[EventEnvelope]) -> None:
        """Record the ``knowledge.witnessed`` events among ``events`` (others are ignored), one bulk write."""
        ops: list[UpdateOne] = []
        for env in events:
            if env.type != MESSAGES_WITNESSED.name:
                continue
            w = MESSAGES_WITNESSED.parse(env.payload)
            for offset, message_id in enumerate(w.message_ids):
                doc = {
                    "tenant_id": env.tenant_id,
                    "user_id": w.user_id,
                    "conversation_id": w.conversation_id,
                    "character_id": w.character_id,
                    "character_kind": w.character_kind,
                    "message_id": message_id,
                    "index": w.first_index + offset,
                }
                key = f"{env.event_id}:{offset}"
                ops.append(UpdateOne({"_id": key}, {"$setOnInsert": doc}, upsert=True))
        if ops:
            await self._col.bulk_write(ops, ordered=False)

    async def witnessed(self, q: WitnessedRows, limit: int | None) -> list[str]:
        cursor = self._col.find(q.filter(), {"message_id": 1}).sort(
            [("user_id", ASCENDING), ("conversation_id", ASCENDING), ("index", ASCENDING)]
        )
        if limit is not None:
            cursor = cursor.limit(limit)
        return [d["message_id"] async for d in cursor]
