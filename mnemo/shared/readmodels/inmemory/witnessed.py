"""The ``witnessed`` read model in memory (port: ``witnessed.WitnessedPort``), for component tests without a
server; same folding rules as ``WitnessedReadModel`` (keyed by event id and offset: applying twice is a no-op)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import MESSAGES_WITNESSED, MessagesWitnessed

if TYPE_CHECKING:
    from mnemo.shared.readmodels.witnessed import WitnessedPort


class InMemoryWitnessed:
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

    async def witnesses(self, tenant_id: str, character_id: str, message_ids: Sequence[str]) -> set[str]:
        wanted = set(message_ids)
        return {
            d["message_id"]
            for d in self.docs.values()
            if (d["tenant_id"], d["character_id"]) == (tenant_id, character_id) and d["message_id"] in wanted
        }

    async def known_message_ids(
        self,
        tenant_id: str,
        character_id: str,
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
        limit: int | None = None,
    ) -> list[str]:
        found = [
            d
            for d in self.docs.values()
            if (d["tenant_id"], d["character_id"]) == (tenant_id, character_id)
            and (user_id is None or d["user_id"] == user_id)
            and (conversation_id is None or d["conversation_id"] == conversation_id)
        ]
        found.sort(key=lambda d: (d["user_id"], d["conversation_id"], d["index"]))
        if limit is not None:
            found = found[:limit]
        return list(dict.fromkeys(d["message_id"] for d in found))


if TYPE_CHECKING:
    _port: WitnessedPort = InMemoryWitnessed()
