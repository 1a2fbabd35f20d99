"""``conversation/<tenant>/<user>/<conversation>``: the messages of one conversation, as ingest records them."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from shared.events.contract import Role
from shared.events.envelope import deterministic_id, stream_id
from shared.events.recorded.base import REGISTRY, RecordedPayload


def conversation_stream(tenant_id: str, user_id: str, conversation_id: str) -> str:
    return stream_id("conversation", tenant_id, user_id, conversation_id)


def created_event_id(tenant_id: str, user_id: str, conversation_id: str, message_id: str) -> str:
    """The id of a message's ``message.recorded`` event: derived from the platform's ids, so ingest records a
    message once, and other services (the memory-extractor's revisions) find the recording without a query."""
    return deterministic_id(tenant_id, user_id, conversation_id, message_id, "created")


class MessageRecorded(RecordedPayload):
    """``message.recorded`` v2: a platform message accepted into its conversation."""

    user_id: str
    conversation_id: str
    message_id: str
    role: Role
    author_id: str | None
    author_name: str
    content: str
    created_at: datetime
    bot_ids: list[str]
    persona_id: str | None
    index: int = Field(..., ge=0, description="0-based position among the conversation's messages")
    tokens: int = Field(..., ge=0, description="estimated tokens of content")


def _message_recorded_v1_to_v2(p: dict[str, object]) -> dict[str, object]:
    # v1 had no token estimate; derive it the same way ingest does now.
    from shared.tokens import estimate_tokens

    p["tokens"] = estimate_tokens(str(p.get("content", "")))
    return p


MESSAGE_RECORDED = REGISTRY.register(
    "message.recorded",
    MessageRecorded,
    schema_version=2,
    encrypted=("author_name", "content"),
    upcasters={1: _message_recorded_v1_to_v2},
    key_owner="user_id",
)


class MessageEdited(RecordedPayload):
    user_id: str
    conversation_id: str
    message_id: str
    content: str
    edited_at: datetime
    tokens: int


MESSAGE_EDITED = REGISTRY.register("message.edited", MessageEdited, encrypted=("content",), key_owner="user_id")


class MessageDeleted(RecordedPayload):
    user_id: str
    conversation_id: str
    message_id: str
    deleted_at: datetime


MESSAGE_DELETED = REGISTRY.register("message.deleted", MessageDeleted, key_owner="user_id")
