"""Pure memory-extractor logic: which characters witnessed a recorded message.

A character only knows what it was present for. When a message is recorded, every bot in its ``bot_ids``
and the user's active persona witnessed it; each (character, message) pair becomes one
``knowledge.witnessed`` event in the character's stream ``knowledge/<tenant>/<character>``. The event id
is deterministic over (tenant, character kind, character, user, conversation, message), so a redelivered or
replayed ``message.recorded`` appends nothing the second time.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mnemo.shared.eventlog.port import Append
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


def group_appends(witnessings: Iterable[Witnessing], versions: dict[str, int]) -> list[Append]:
    """One ``Append`` per character stream, events in arrival order, repeated event ids dropped.

    ``versions`` holds each stream's current version (missing means 0, a new stream).
    """
    by_stream: dict[str, dict[str, NewEvent]] = {}
    for w in witnessings:
        by_stream.setdefault(w.stream_id, {}).setdefault(w.event.event_id, w.event)
    return [Append(sid, versions.get(sid, 0), list(events.values())) for sid, events in by_stream.items()]


def streams_of(witnessings: Sequence[Witnessing]) -> list[str]:
    return list(dict.fromkeys(w.stream_id for w in witnessings))
