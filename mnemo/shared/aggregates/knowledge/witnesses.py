"""Who witnessed a message (the knowledge aggregate's decider of witnessing): a character only knows what it was
present for. When a message is recorded, every bot in its ``bot_ids`` and the user's active persona witnessed it;
each (character, message) pair becomes one ``knowledge.witnessed`` event in the character's stream. The event id
is deterministic over (tenant, character kind, character, user, conversation, message), so a redelivered or
replayed ``message.recorded`` appends nothing the second time.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemo.shared.events.envelope import NewEvent, deterministic_id
from mnemo.shared.events.recorded import (
    MESSAGES_WITNESSED,
    MessageRecorded,
    MessagesWitnessed,
    knowledge_stream,
    new_event,
)


@dataclass(frozen=True)
class Witnessing:
    """One character witnessing one message, ready to append."""

    stream_id: str
    event: NewEvent


def witness_event_id(tenant_id: str, kind: str, character_id: str, msg: MessageRecorded) -> str:
    return deterministic_id(
        MESSAGES_WITNESSED.name, tenant_id, kind, character_id, msg.user_id, msg.conversation_id, msg.message_id
    )


def witnesses_of(
    tenant_id: str, msg: MessageRecorded, *, causation_id: str | None = None, traceparent: str | None = None
) -> list[Witnessing]:
    """One event per bot present (without repeats) and one for the persona, if any; each continues the
    trace ``traceparent`` of the message it witnesses."""
    characters: list[tuple[str, str]] = [("bot", b) for b in dict.fromkeys(msg.bot_ids)]
    if msg.persona_id:
        characters.append(("persona", msg.persona_id))
    out: list[Witnessing] = []
    for kind, character_id in characters:
        payload = MessagesWitnessed(
            character_id=character_id,
            character_kind="bot" if kind == "bot" else "persona",
            user_id=msg.user_id,
            conversation_id=msg.conversation_id,
            message_ids=[msg.message_id],
            first_index=msg.index,
            last_index=msg.index,
        )
        event = new_event(
            payload,
            event_id=witness_event_id(tenant_id, kind, character_id, msg),
            tenant_id=tenant_id,
            occurred_at=msg.created_at,
            causation_id=causation_id,
            correlation_id=causation_id,
            traceparent=traceparent,
        )
        out.append(Witnessing(knowledge_stream(tenant_id, character_id), event))
    return out
