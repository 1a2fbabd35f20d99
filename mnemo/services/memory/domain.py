"""Pure decisions of the memory service: a memory's state from its stream, the legacy lore entry made from it,
and the events that convert, edit or delete it.

Idempotency: a legacy entry's id is derived from the tenant, the user and the memory, and every event id from
its stream and what it records, so a retried request (the reply was lost, the caller timed out) appends nothing
new: the log reports the duplicate and the service answers as the first time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from mnemo.shared.events.envelope import EventEnvelope, NewEvent, deterministic_id
from mnemo.shared.events.recorded import (
    SUMMARY_CREATED,
    SUMMARY_RETIRED,
    LegacyLoreCreated,
    LegacyLoreDeleted,
    SummaryCreated,
    SummaryRetired,
    legacy_lore_stream,
    new_event,
)
from mnemo_client.wire.memory_contract import LEGACY_MEMORY, MemoryConvertToLoreRequest

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


@dataclass(frozen=True)
class MemoryState:
    """What the summary stream says about one memory: its creation and whether (and why) it was retired."""

    created: SummaryCreated
    retired_reason: str | None  # the last retirement's reason; `deleted` wins over any other
    deleted: bool
    replaced_by: str | None = None  # the version (or recomputation) that took its place, if any


def memory_state(events: list[EventEnvelope], memory_id: str) -> MemoryState | None:
    """Fold a ``summaries/<tenant>/<user>/<conversation>`` stream for one summary; None if it is not there."""
    fold = _MemoryFold()
    for env in events:
        if env.payload.get("summary_id") != memory_id:
            continue
        on_event = _MEMORY_FOLD.get(env.type)
        if on_event is not None:
            on_event(fold, env)
    return None if fold.created is None else MemoryState(fold.created, fold.reason, fold.deleted, fold.replaced_by)


@dataclass
class _MemoryFold:
    created: SummaryCreated | None = None
    reason: str | None = None
    deleted: bool = False
    replaced_by: str | None = None

    def on_created(self, env: EventEnvelope) -> None:
        self.created = SUMMARY_CREATED.parse(env.payload)

    def on_retired(self, env: EventEnvelope) -> None:
        retired = SUMMARY_RETIRED.parse(env.payload)
        self.deleted = self.deleted or retired.reason == "deleted"
        self.reason = "deleted" if self.deleted else retired.reason
        self.replaced_by = retired.replaced_by or self.replaced_by


_MEMORY_FOLD: dict[str, Callable[[_MemoryFold, EventEnvelope], None]] = {
    SUMMARY_CREATED.name: _MemoryFold.on_created,
    SUMMARY_RETIRED.name: _MemoryFold.on_retired,
}


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


def memory_deleted_event(tenant_id: str, memory: SummaryCreated, now: datetime) -> NewEvent:
    """``summary.retired`` with reason ``deleted``: the owner removed the memory (its vectors follow)."""
    retired = SummaryRetired(
        summary_id=memory.summary_id,
        user_id=memory.user_id,
        conversation_id=memory.conversation_id,
        reason="deleted",
        retired_at=now,
    )
    return new_event(
        retired,
        # The id the summarizer gives a retirement (one per summary and reason), so each is recorded once.
        event_id=deterministic_id("summary.retired", memory.summary_id, "deleted"),
        tenant_id=tenant_id,
        occurred_at=now,
    )


EDITED = "edited"


def edited_id(memory_id: str, text: str) -> str:
    """The id of the version ``text`` makes of ``memory_id``: sending the same edit again finds the same id."""
    return deterministic_id("summary.edited", memory_id, text)


def edited_version(memory: SummaryCreated, text: str, by_user_id: str) -> SummaryCreated:
    """The new version of an edited summary: the same memory (range, participants, audience, importance, mood)
    with the owner's text. Its citations go: they point into the old text, so the new one is derived from all
    the messages it covers, as an LLM summary is."""
    return memory.model_copy(
        update={
            "summary_id": edited_id(memory.summary_id, text),
            "text": text,
            "method": f"manual:{by_user_id}",
            "prompt_version": None,
            "citations": [],
        }
    )


def memory_edited_events(
    tenant_id: str, memory: SummaryCreated, edited: SummaryCreated, now: datetime
) -> list[NewEvent]:
    """``summary.created`` (the new version) and ``summary.retired`` (``edited``, replaced by it), appended
    together so no reader sees both versions live or neither."""
    retired = SummaryRetired(
        summary_id=memory.summary_id,
        user_id=memory.user_id,
        conversation_id=memory.conversation_id,
        reason=EDITED,
        replaced_by=edited.summary_id,
        retired_at=now,
    )
    return [
        new_event(edited, event_id=deterministic_id("summary.created", edited.summary_id), tenant_id=tenant_id,
                  occurred_at=now),
        new_event(retired, event_id=deterministic_id("summary.retired", memory.summary_id, EDITED),
                  tenant_id=tenant_id, occurred_at=now),
    ]  # fmt: skip


def earlier_versions(events: list[EventEnvelope], memory_id: str) -> list[str]:
    """The versions ``memory_id`` was edited from, newest first, read from its summary stream: deleting a
    memory deletes the legacy lore made from any of them."""
    edited_from: dict[str, str] = {}
    for env in events:
        if env.type == SUMMARY_RETIRED.name:
            retired = SUMMARY_RETIRED.parse(env.payload)
            if retired.reason == EDITED and retired.replaced_by:
                edited_from[retired.replaced_by] = retired.summary_id
    earlier: list[str] = []
    current = memory_id
    while current in edited_from and edited_from[current] not in earlier:
        current = edited_from[current]
        earlier.append(current)
    return earlier
