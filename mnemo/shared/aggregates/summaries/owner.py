"""The owner's side of a summary stream (the memory service's ``mnemo.rpc.memory.{edit,delete}.v1``), pure, the
clock passed in: one memory's state folded from its stream, its deletion, its edited version and the versions it
was edited from.

Idempotency: a new version's id is derived from the memory and its text, and every event id from what it
records (a retirement's is the summarizer's, one per summary and reason), so a retried request appends nothing
new: the log reports the duplicate and the service answers as the first time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from mnemo.shared.aggregates.summaries.live import retirement
from mnemo.shared.events.envelope import EventEnvelope, NewEvent, deterministic_id
from mnemo.shared.events.recorded import SUMMARY_CREATED, SUMMARY_RETIRED, SummaryCreated, new_event

EDITED: Final = "edited"


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


def memory_deleted_event(tenant_id: str, memory: SummaryCreated, now: datetime) -> NewEvent:
    """``summary.retired`` with reason ``deleted``: the owner removed the memory (its vectors follow)."""
    # The id the summarizer gives a retirement (one per summary and reason), so each is recorded once.
    event_id, retired = retirement(memory, "deleted", None, now)
    return new_event(retired, event_id=event_id, tenant_id=tenant_id, occurred_at=now)


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
    retired_id, retired = retirement(memory, EDITED, edited.summary_id, now)
    return [
        new_event(edited, event_id=deterministic_id("summary.created", edited.summary_id), tenant_id=tenant_id,
                  occurred_at=now),
        new_event(retired, event_id=retired_id, tenant_id=tenant_id, occurred_at=now),
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
