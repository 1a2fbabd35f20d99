"""The ``lore_timed`` read model in memory (port: ``lore_timed.TimedPort``), for component tests without a
server; like ``LoreTimedReadModel`` it keeps per conversation the state of the newest stream version only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import LORE_TIMED_STATE_RECORDED, LoreTimedStateRecorded, lore_timed_stream
from mnemo.shared.readmodels.lore_timed import NOTHING_RECORDED, RecordedTimedState, TimedPort


class InMemoryLoreTimed:
    def __init__(self) -> None:
        self.docs: dict[str, dict[str, Any]] = {}  # stream id -> the newest recorded state, as recorded

    async def apply(self, events: Sequence[EventEnvelope]) -> None:
        for env in events:
            if env.type != LORE_TIMED_STATE_RECORDED.name:
                continue
            p = LoreTimedStateRecorded.model_validate(env.payload)
            stream = lore_timed_stream(env.tenant_id, p.user_id, p.conversation_id)
            stored = self.docs.get(stream)
            if stored is None or stored["version"] < env.version:
                self.docs[stream] = {
                    "tenant_id": env.tenant_id,
                    "version": env.version,
                    "message_count": p.message_count,
                    "sticky": p.sticky,
                    "cooldown": p.cooldown,
                }

    async def state(self, tenant_id: str, user_id: str, conversation_id: str) -> RecordedTimedState:
        doc = self.docs.get(lore_timed_stream(tenant_id, user_id, conversation_id))
        if doc is None or doc["tenant_id"] != tenant_id:
            return NOTHING_RECORDED
        return RecordedTimedState(int(doc["version"]), int(doc["message_count"]), doc["sticky"], doc["cooldown"])


if TYPE_CHECKING:
    _port: TimedPort = InMemoryLoreTimed()
