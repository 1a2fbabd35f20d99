"""The ``witnessed`` read model: which character was present for which message.

One document per (tenant, character, message), built from ``knowledge.witnessed`` events and rebuilt by
replaying them. ``_id`` is the event's deterministic id and the upsert is keyed on it, so applying an
event twice is a no-op. No user text is stored here. Every query takes the tenant first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from pymongo import ASCENDING, UpdateOne
from pymongo.asynchronous.database import AsyncDatabase

from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import MESSAGES_WITNESSED

COLLECTION = "witnessed"


class WitnessedPort(Protocol):
    """What the extractor calls on the read model; adapters: ``WitnessedReadModel`` and the in-memory fake
    (``mnemo.shared.readmodels.inmemory.witnessed``), both run through ``tests/contract/test_readmodels_contract.py``."""

    async def apply(self, events: Sequence[EventEnvelope]) -> None: ...

    async def witnesses(self, tenant_id: str, character_id: str, message_ids: Sequence[str]) -> set[str]: ...

    async def known_message_ids(
        self,
        tenant_id: str,
        character_id: str,
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
        limit: int | None = None,
    ) -> list[str]: ...


class WitnessedReadModel:
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

    async def witnesses(self, tenant_id: str, character_id: str, message_ids: Sequence[str]) -> set[str]:
        """The subset of ``message_ids`` the character witnessed."""
        if not message_ids:
            return set()
        query = {"tenant_id": tenant_id, "character_id": character_id, "message_id": {"$in": list(message_ids)}}
        return {d["message_id"] async for d in self._col.find(query, {"message_id": 1})}

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
        query: dict[str, Any] = {"tenant_id": tenant_id, "character_id": character_id}
        if user_id is not None:
            query["user_id"] = user_id
        if conversation_id is not None:
            query["conversation_id"] = conversation_id
        cursor = self._col.find(query, {"message_id": 1}).sort(
            [("user_id", ASCENDING), ("conversation_id", ASCENDING), ("index", ASCENDING)]
        )
        if limit is not None:
            cursor = cursor.limit(limit)
        return list(dict.fromkeys([d["message_id"] async for d in cursor]))
