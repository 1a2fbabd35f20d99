"""The ``witnessed`` read model in memory (port: ``witnessed.WitnessedPort``), for component tests without a
server; same folding rules as ``WitnessedReadModel`` (keyed by event id and offset: applying twice is a no-op)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import MESSAGES_WITNESSED, MessagesWitnessed
from mnemo.shared.readmodels.witnessed import WitnessedPort, WitnessedRows


class InMemoryWitnessed(WitnessedPort):
    def __init__(self) -> None:
        self.docs: dict[str, dict[str, Any]] = {}

    async def apply(self, events: Sequence[EventEnvelope]) -> None:
        for env in events:
            if env.type != MESSAGES_WITNESSED.name:
                continue
            w = MessagesWitnessed.model_validate(env.payload)
            for offset, message_id in enumerate(w.message_ids):
                self.docs.setdefault(
                    f"{env.event_id}:{offset}",
                    {
                        "tenant_id": env.tenant_id,
                        "user_id": w.user_id,
                        "conversation_id": w.conversation_id,
                        "character_id": w.character_id,
                        "message_id": message_id,
                        "index": w.first_index + offset,
                    },
                )

    async def witnessed(self, q: WitnessedRows, limit: int | None) -> list[str]:
        found = sorted(
            filter(q.admits, self.docs.values()), key=lambda d: (d["user_id"], d["conversation_id"], d["index"])
        )
        return [d["message_id"] for d in found[:limit]]
