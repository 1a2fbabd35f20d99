"""A conversation as its log stream tells it, alternatives included: what swipes and forks are decided on.

The read models hold one document per message with the text shown; deciding a swipe needs more (every
alternative's text, which one is current, which were deleted) and a fork needs the parent's messages as its
log holds them, so ingest folds the stream (pure, no I/O). It is read only for the batches that edit,
delete, swipe or fork (docs/branches.md), so the hot path of new messages never pays for it.

A *slot* is a message of the history, named by the id it was first recorded with; each alternative id (the
slot's own included) has its own text and ``created_at``, and ``current`` is the one the history shows. The
memory service's conversation timeline shows a message's swipes from the same fold (deleted ones flagged), so
the stream's alternatives are folded in this one place. The fold is idempotent
by log version: events at or below ``version`` are skipped, so a catch-up tail can be folded in again.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mnemo.shared.events.envelope import EventEnvelope, Payload
from mnemo.shared.events.recorded import (
    CONVERSATION_FORKED,
    MESSAGE_ALTERNATIVE_DELETED,
    MESSAGE_ALTERNATIVE_RECORDED,
    MESSAGE_DELETED,
    MESSAGE_EDITED,
    MESSAGE_RECORDED,
)


@dataclass
class Slot:
    """One message of the history and its alternatives."""

    recorded: dict[str, Any]  # the ``message.recorded`` payload (role, author, scene, index...)
    index: int
    current: str
    texts: dict[str, str]  # alternative id (the slot's own id too) -> its latest text (a deleted one's kept)
    deleted: bool = False
    # Alternative id -> its ``created_at``, in recorded order, deleted ones too: what the memory service's
    # timeline shows of a message's swipes (``Timeline.gone`` flags the deleted ones).
    made: dict[str, Any] = field(default_factory=dict)


@dataclass
class Timeline:
    version: int = 0
    slots: dict[str, Slot] = field(default_factory=dict)
    slot_of: dict[str, str] = field(default_factory=dict)  # every alternative id (slot ids too) -> slot id
    gone: set[str] = field(default_factory=set)  # deleted alternatives (never selectable again)
    forked_from: str | None = None  # the parent conversation, for a fork
    root: str | None = None  # the first conversation of the fork family, for a fork

    def copy(self) -> Timeline:
        return copy.deepcopy(self)

    def fold(self, envelopes: Iterable[EventEnvelope]) -> Timeline:
        for env in sorted(envelopes, key=lambda e: e.version):
            self.step(env)
        return self

    def step(self, env: EventEnvelope) -> None:
        """Fold the next event of a version-ordered walk (skipped if at or below ``version``: folded already)."""
        if env.version > self.version:
            self.apply(env.type, env.payload)
            self.version = env.version

    def apply(self, event_type: str, payload: Payload) -> None:
        """Fold one event (also what a decision applies for the events it decided, before they commit)."""
        on_event = _APPLY.get(event_type)
        if on_event is not None:
            on_event(self, payload)

    def slot(self, alternative_id: str) -> Slot | None:
        """The slot of a live alternative (None: unknown, or that alternative was deleted)."""
        slot_id = self.slot_of.get(alternative_id) if alternative_id not in self.gone else None
        return self.slots.get(slot_id) if slot_id is not None else None

    def swiped(self) -> list[tuple[str, Slot]]:
        """The slots that ever had an alternative besides their own message, in recorded order."""
        return [(sid, s) for sid, s in self.slots.items() if len(s.made) > 1]

    def history(self, up_to_index: int) -> list[tuple[str, Slot]]:
        """The live slots at or before ``up_to_index``, in order (what a fork from there keeps)."""
        live = [(sid, s) for sid, s in self.slots.items() if not s.deleted and s.index <= up_to_index]
        return sorted(live, key=lambda item: item[1].index)


def _recorded(tl: Timeline, p: Payload) -> None:
    mid = str(p["message_id"])
    tl.slots[mid] = Slot(dict(p), int(p["index"]), mid, {mid: str(p["content"])}, made={mid: p["created_at"]})
    tl.slot_of[mid] = mid


def _edited(tl: Timeline, p: Payload) -> None:
    slot = tl.slots.get(str(p["message_id"]))
    if slot is None:
        return
    alternative = p.get("alternative_id") or slot.current
    slot.texts[str(alternative)] = str(p["content"])
    slot.current = str(alternative)


def _deleted(tl: Timeline, p: Payload) -> None:
    slot = tl.slots.get(str(p["message_id"]))
    if slot is not None:
        slot.deleted = True


def _alternative_recorded(tl: Timeline, p: Payload) -> None:
    slot = tl.slots.get(str(p["swipe_of"]))
    if slot is not None:
        slot.texts[str(p["message_id"])] = str(p["content"])
        slot.made[str(p["message_id"])] = p["created_at"]
        tl.slot_of[str(p["message_id"])] = str(p["swipe_of"])


def _alternative_deleted(tl: Timeline, p: Payload) -> None:
    tl.gone.add(str(p["message_id"]))  # its text stays: the memory service's timeline shows it, flagged deleted


def _forked(tl: Timeline, p: Payload) -> None:
    tl.forked_from = str(p["parent_conversation_id"])
    tl.root = str(p["root_conversation_id"])


_APPLY = {
    MESSAGE_RECORDED.name: _recorded,
    MESSAGE_EDITED.name: _edited,
    MESSAGE_DELETED.name: _deleted,
    MESSAGE_ALTERNATIVE_RECORDED.name: _alternative_recorded,
    MESSAGE_ALTERNATIVE_DELETED.name: _alternative_deleted,
    CONVERSATION_FORKED.name: _forked,
}
