"""Recorded events built directly, for tests that seed read models without going through ingest (and the edits
and deletions of messages as new events to append)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from mnemo.shared.events.envelope import EventEnvelope, NewEvent, deterministic_id
from mnemo.shared.events.recorded import REGISTRY, conversation_stream


def recorded(
    tenant: str, stream: str, version: int, type_: str, payload: dict[str, Any], at: datetime
) -> EventEnvelope:
    """An event as the log would return it: deterministic id, current schema version, times ``at``."""
    schema_version = REGISTRY.get(type_).schema_version
    event_id = deterministic_id(stream, str(version))
    return numbered(tenant, stream, version, type_, payload, at, schema_version=schema_version, event_id=event_id)


def numbered(
    tenant: str,
    stream: str,
    version: int,
    type_: str,
    payload: dict[str, Any],
    at: datetime,
    *,
    schema_version: int = 1,
    causation: str | None = None,
    event_id: str | None = None,
    traceparent: str | None = None,
) -> EventEnvelope:
    """An event at ``version`` of ``stream`` with the id given (else the plain ``e<version>``), the schema
    version given (1 unless told), times ``at`` and the trace context given (none unless told)."""
    return EventEnvelope(
        event_id=event_id or f"e{version}",
        type=type_,
        schema_version=schema_version,
        stream_id=stream,
        version=version,
        tenant_id=tenant,
        occurred_at=at,
        recorded_at=at,
        causation_id=causation,
        traceparent=traceparent,
        payload=payload,
    )


def message_recorded(
    tenant: str,
    user_id: str,
    conversation_id: str,
    index: int,
    content: str,
    *,
    created_at: datetime,
    role: str = "user",
    author_id: str | None = None,
    author_name: str = "",
    bot_ids: Sequence[str] = (),
    persona_id: str | None = None,
    message_id: str | None = None,
    tokens: int = 10,
) -> EventEnvelope:
    """The ``message.recorded`` of message ``index`` (id ``m<index>`` unless given), at stream version
    ``index + 1`` of its conversation, as ingest would have recorded it."""
    payload = {
        "user_id": user_id,
        "conversation_id": conversation_id,
        "message_id": message_id or f"m{index}",
        "role": role,
        "author_id": author_id,
        "author_name": author_name,
        "content": content,
        "created_at": created_at,
        "bot_ids": list(bot_ids),
        "persona_id": persona_id,
        "index": index,
        "tokens": tokens,
    }
    stream = conversation_stream(tenant, user_id, conversation_id)
    return recorded(tenant, stream, index + 1, "message.recorded", payload, created_at)


def message_to_append(tenant: str, index: int, content: str, at: datetime) -> NewEvent:
    """The ``message.recorded`` of message ``m<index>`` of ``u1``'s conversation ``c1`` (to Ana, persona ``p1``,
    bot ``b1``), to append: ``at`` plus ``index`` minutes."""
    payload = {"user_id": "u1", "conversation_id": "c1", "message_id": f"m{index}", "role": "user", "author_id": "p1",
               "author_name": "Ana", "content": content, "created_at": at + timedelta(minutes=index),
               "bot_ids": ["b1"], "persona_id": "p1", "index": index, "tokens": 10}  # fmt: skip
    return NewEvent(type="message.recorded", tenant_id=tenant, payload=payload)


def message_edited(
    tenant: str, user: str, conv: str, message_id: str, content: str, edited_at: datetime, tokens: int
) -> NewEvent:
    """A ``message.edited`` event to append: ``message_id`` now reads ``content``."""
    payload = {"user_id": user, "conversation_id": conv, "message_id": message_id, "content": content,
               "edited_at": edited_at, "tokens": tokens}  # fmt: skip
    return NewEvent(type="message.edited", tenant_id=tenant, payload=payload)


def message_deleted(tenant: str, user: str, conv: str, message_id: str, deleted_at: datetime) -> NewEvent:
    """A ``message.deleted`` event to append."""
    payload = {"user_id": user, "conversation_id": conv, "message_id": message_id, "deleted_at": deleted_at}
    return NewEvent(type="message.deleted", tenant_id=tenant, payload=payload)
