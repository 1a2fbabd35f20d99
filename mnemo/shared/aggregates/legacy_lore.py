"""The legacy lore aggregate: a legacy entry's stream (``legacy_lore/<tenant>/<user>/<legacy>``), the entry a
memory becomes when its owner converts it (the memory service's ``mnemo.rpc.memory.convert_to_lore.v1``) and its
deletion with the memory; pure, the clock passed in. Its state is the legacy lore read model's (an entry is
created once and deleted once, so nothing is decided on a fold).

Idempotency: a legacy entry's id is derived from the tenant, the user and the memory, and every event id from
its stream and what it records, so a retried request (the reply was lost, the caller timed out) appends nothing
new: the log reports the duplicate and the service answers as the first time. ``EVENTS`` names the stream's
payload classes.
"""

from __future__ import annotations

import re
from datetime import datetime

from mnemo.shared.events.envelope import NewEvent, deterministic_id
from mnemo.shared.events.recorded import (
    LegacyLoreCreated,
    LegacyLoreDeleted,
    SummaryCreated,
    legacy_lore_stream,
    new_event,
)
from mnemo_client.wire.memory_contract import LEGACY_MEMORY, MemoryConvertToLoreRequest

#: The payload classes of a legacy entry's stream.
EVENTS = (LegacyLoreCreated, LegacyLoreDeleted)

MAX_TAGS = 12
MAX_TAG_CHARS = 64
# Separators of an emotional context such as "tense, then relieved; warm -> playful" (LLM summaries).
_TAG_SPLIT = re.compile(r"\s*(?:[,;/|\n]|->|→|=>|\bthen\b|\band\b|\bbut\b)\s*", re.IGNORECASE)
_TAG_TRIM = " \t.!?:\"'()[]{}-–—"


def legacy_id_for(tenant_id: str, user_id: str, memory_id: str) -> str:
    """The one legacy entry a memory can have: converting twice finds the same id."""
    return deterministic_id("legacy_lore", tenant_id, user_id, memory_id)


def split_tags(emotional_context: str | None) -> list[str]:
    """Emotional tags from a summary's free-text emotional context: split on list separators and on the
    words that chain moods ("then", "and", "but", arrows), trimmed, lower-cased, de-duplicated in order."""
    if not emotional_context:
        return []
    tags: list[str] = []
    for part in _TAG_SPLIT.split(emotional_context):
        tag = " ".join(part.strip(_TAG_TRIM).lower().split())[:MAX_TAG_CHARS].strip()
        if tag and tag not in tags:
            tags.append(tag)
        if len(tags) == MAX_TAGS:
            break
    return tags


def clean_tags(tags: list[str]) -> list[str]:
    """Tags a user chose: whitespace collapsed, lower-cased (as split ones are), each kept once in order."""
    cleaned: list[str] = []
    for raw in tags:
        tag = " ".join(raw.lower().split())[:MAX_TAG_CHARS]
        if tag and tag not in cleaned:
            cleaned.append(tag)
    return cleaned


def legacy_entry(
    tenant_id: str, req: MemoryConvertToLoreRequest, memory: SummaryCreated, now: datetime
) -> LegacyLoreCreated:
    """The ``legacy_memory`` entry a memory becomes: its text, participants, range, importance and mood kept
    (the reviewer's text, participants, tags and importance instead, when the request gives them)."""
    return LegacyLoreCreated(
        legacy_id=legacy_id_for(tenant_id, req.user_id, memory.summary_id),
        user_id=req.user_id,
        memory_id=memory.summary_id,
        conversation_id=memory.conversation_id,
        entry_type=LEGACY_MEMORY,
        title=req.title,
        text=memory.text if req.text is None else req.text,
        participants=list(memory.participants) if req.participants is None else list(dict.fromkeys(req.participants)),
        start_at=memory.start_at,
        end_at=memory.end_at,
        importance=memory.importance if req.importance is None else req.importance,
        emotional_tags=split_tags(memory.emotional_context) if req.tags is None else clean_tags(req.tags),
        applies_to_bots=sorted(set(req.applies_to_bots)),
        applies_to_personas=sorted(set(req.applies_to_personas)),
        summary_type=memory.summary_type,
        method=memory.method,
        prompt_version=memory.prompt_version,
        created_at=now,
        message_ids=memory.cited_message_ids(),
    )


def legacy_created_event(tenant_id: str, entry: LegacyLoreCreated) -> NewEvent:
    stream = legacy_lore_stream(tenant_id, entry.user_id, entry.legacy_id)
    return new_event(
        entry,
        event_id=deterministic_id(stream, "created"),
        tenant_id=tenant_id,
        occurred_at=entry.created_at,
    )


def legacy_deleted_event(tenant_id: str, user_id: str, memory_id: str, now: datetime) -> NewEvent:
    legacy_id = legacy_id_for(tenant_id, user_id, memory_id)
    stream = legacy_lore_stream(tenant_id, user_id, legacy_id)
    deleted = LegacyLoreDeleted(legacy_id=legacy_id, user_id=user_id, memory_id=memory_id, deleted_at=now)
    return new_event(
        deleted,
        event_id=deterministic_id(stream, "deleted"),
        tenant_id=tenant_id,
        occurred_at=now,
    )
