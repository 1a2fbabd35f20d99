"""``conversation/<tenant>/<user>/<conversation>``: the messages of one conversation, as ingest records them."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from mnemo.shared.events.envelope import deterministic_id, stream_id
from mnemo.shared.events.recorded.base import REGISTRY, RecordedPayload
from mnemo_client.wire.contract import Role


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
    from mnemo.shared.tokens import estimate_tokens

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


class MessageEditRecorded(RecordedPayload):
    """``message.edited``: the message's text changed; also how a swipe selection reaches every consumer."""

    user_id: str
    conversation_id: str
    message_id: str
    content: str
    edited_at: datetime
    tokens: int
    alternative_id: str | None = Field(
        None, description="a swipe selection: the alternative whose text the message now shows (docs/branches.md)"
    )


MESSAGE_EDITED = REGISTRY.register("message.edited", MessageEditRecorded, encrypted=("content",), key_owner="user_id")


class MessageDeletionRecorded(RecordedPayload):
    user_id: str
    conversation_id: str
    message_id: str
    deleted_at: datetime


MESSAGE_DELETED = REGISTRY.register("message.deleted", MessageDeletionRecorded, key_owner="user_id")


class MessageAlternativeRecorded(RecordedPayload):
    """``message.alternative_recorded``: an alternative (swipe) of message ``swipe_of``; kept out of history
    (no read model projects it) until a ``message.edited`` with its ``alternative_id`` makes it current."""

    user_id: str
    conversation_id: str
    message_id: str
    swipe_of: str = Field(..., description="the message (slot) it is an alternative of")
    content: str
    created_at: datetime
    tokens: int = Field(..., ge=0)


MESSAGE_ALTERNATIVE_RECORDED = REGISTRY.register(
    "message.alternative_recorded", MessageAlternativeRecorded, encrypted=("content",), key_owner="user_id"
)


class MessageAlternativeDeleted(RecordedPayload):
    """``message.alternative_deleted``: a non-current alternative was removed; it can no longer be selected."""

    user_id: str
    conversation_id: str
    message_id: str
    swipe_of: str
    deleted_at: datetime


MESSAGE_ALTERNATIVE_DELETED = REGISTRY.register(
    "message.alternative_deleted", MessageAlternativeDeleted, key_owner="user_id"
)


class ConversationForkRecorded(RecordedPayload):
    """``conversation.forked``: the first event of a fork's stream; the parent's messages up to ``from_index``
    follow it as ``message.recorded`` copies (copy-on-fork, docs/branches.md)."""

    user_id: str
    conversation_id: str
    parent_conversation_id: str
    from_message_id: str
    from_index: int = Field(..., ge=0, description="the index of from_message_id in the parent")
    root_conversation_id: str = Field(..., description="the parent's root: every fork of a family shares it")
    forked_at: datetime


CONVERSATION_FORKED = REGISTRY.register("conversation.forked", ConversationForkRecorded, key_owner="user_id")
