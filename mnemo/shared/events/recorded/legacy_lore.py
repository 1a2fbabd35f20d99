"""``legacy_lore/<tenant>/<user>/<legacy>``: memories a user kept as lore entries."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from mnemo.shared.events.envelope import stream_id
from mnemo.shared.events.recorded.base import REGISTRY, RecordedPayload


def legacy_lore_stream(tenant_id: str, user_id: str, legacy_id: str) -> str:
    return stream_id("legacy_lore", tenant_id, user_id, legacy_id)


class LegacyLoreCreated(RecordedPayload):
    """A user kept a memory (a summary) as a lore entry of type ``legacy_memory`` for chosen bots and personas.

    It carries what it keeps of the memory (text, participants, date range, importance, emotional tags) so the
    entry stands on its own: deleting the memory deletes the entry too (``legacy_lore.deleted``), but nothing
    else about the memory changes it."""

    legacy_id: str
    user_id: str
    memory_id: str = Field(..., description="the summary it was made from")
    conversation_id: str
    entry_type: Literal["legacy_memory"] = "legacy_memory"
    title: str | None = None
    text: str
    participants: list[str]
    start_at: datetime
    end_at: datetime
    importance: int = Field(..., ge=1, le=10)
    emotional_tags: list[str]
    applies_to_bots: list[str]
    applies_to_personas: list[str]
    summary_type: str
    method: str
    prompt_version: str | None = None
    created_at: datetime
    message_ids: list[str] = Field(
        default_factory=list,
        description="the messages the memory's text was derived from (the summary's cited messages); empty for "
        "an entry recorded before this field",
    )


LEGACY_LORE_CREATED = REGISTRY.register(
    "legacy_lore.created", LegacyLoreCreated, encrypted=("title", "text", "emotional_tags"), key_owner="user_id"
)


class LegacyLoreDeleted(RecordedPayload):
    legacy_id: str
    user_id: str
    memory_id: str
    reason: Literal["memory_deleted"] = "memory_deleted"
    deleted_at: datetime


LEGACY_LORE_DELETED = REGISTRY.register("legacy_lore.deleted", LegacyLoreDeleted, key_owner="user_id")
