"""The ``lore_timed`` read model: each conversation's World Info timed effects (sticky, cooldown), latest only.

One document per conversation (``_id`` = its ``lore_timed/<tenant>/<user>/<conversation>`` stream), folded
from ``lore.timed_state_recorded`` events and rebuilt by replaying them. An event only replaces the document
when its stream version is newer, so a redelivered or replayed older event changes nothing. No user text is
stored (entry idents, content hashes and message counts). Every query takes the tenant first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import LORE_TIMED_STATE_RECORDED, lore_timed_stream

COLLECTION = "lore_timed"


@dataclass(frozen=True)
class RecordedTimedState:
    """A conversation's newest recorded timed effects, as recorded (the context-assembler's World Info engine
    reads ``sticky`` and ``cooldown`` as its ``TimedState``)."""

    version: int  # the stream version this state is at (0: nothing recorded yet)
    message_count: int
    sticky: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    cooldown: Mapping[str, Mapping[str, object]] = field(default_factory=dict)


NOTHING_RECORDED = RecordedTimedState(0, 0)


class TimedPort(Protocol):
    """What ``TimedStates`` calls on the read model; adapters: ``LoreTimedReadModel`` and the in-memory fake
    (``mnemo.shared.readmodels.inmemory.lore_timed``), both run through ``tests/contract/test_readmodels_contract.py``."""

    async def apply(self, events: Sequence[EventEnvelope]) -> None: ...

    async def state(self, tenant_id: str, user_id: str, conversation_id: str) -> RecordedTimedState: ...


class LoreTimedReadModel:
    def __init__(self, db: AsyncDatabase[dict[str, Any]]) -> None:
        self._col = db[COLLECTION]

    async def apply(self, events: Sequence[EventEnvelope]) -> None:
        """Keep, per conversation, the newest ``lore.timed_state_recorded`` among ``events`` (others ignored)."""
        for env in events:
            if env.type != LORE_TIMED_STATE_RECORDED.name:
                continue
            p = LORE_TIMED_STATE_RECORDED.parse(env.payload)
            doc = {
                "tenant_id": env.tenant_id,
                "version": env.version,
                "message_count": p.message_count,
                "sticky": p.sticky,
                "cooldown": p.cooldown,
            }
            stream = lore_timed_stream(env.tenant_id, p.user_id, p.conversation_id)
            # Matches only an older document (or none: then the upsert inserts); with an equal or newer one
            # stored, the upsert's insert of the same _id fails: nothing to do.
            with contextlib.suppress(DuplicateKeyError):
                await self._col.update_one({"_id": stream, "version": {"$lt": env.version}}, {"$set": doc}, upsert=True)

    async def state(self, tenant_id: str, user_id: str, conversation_id: str) -> RecordedTimedState:
        doc = await self._col.find_one({"_id": lore_timed_stream(tenant_id, user_id, conversation_id)})
        if doc is None or doc.get("tenant_id") != tenant_id:
            return NOTHING_RECORDED
        return RecordedTimedState(int(doc["version"]), int(doc["message_count"]), doc["sticky"], doc["cooldown"])
