"""Pure: the messages of a summary range, folded from a window of the conversation's log stream.

Why the log and not the messages read model: the summarizer reacts to a relayed ``message.recorded``, and the
log is guaranteed to hold every event up to that event's version, while a read model may still lag behind
the relay (a crash between append and projection). Reading the window of the stream that ends at the
triggering event's version gives the same answer on every redelivery: later edits and deletions are not
seen, so a redelivered message produces the very same summary.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from mnemo.services.summarizer.domain import RangeMessage, SummaryRange
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    MESSAGE_DELETED,
    MESSAGE_EDITED,
    MESSAGE_RECORDED,
)
from mnemo.shared.mapping import mapped


def window_start(trigger_version: int, rng: SummaryRange, factor: int) -> int:
    """``after_version`` of a window ``factor`` times the range size (plus slack for edits and deletes)."""
    span = rng.last_index - rng.first_index + 1
    return max(0, trigger_version - factor * (span + 4))


@dataclass
class _RangeFold:
    """``fold_range``'s state: the range's live messages by id, and whether the window reached back."""

    rng: SummaryRange
    by_id: dict[str, RangeMessage] = field(default_factory=dict)
    reached: bool = False

    def on_recorded(self, env: EventEnvelope) -> None:
        rec = MESSAGE_RECORDED.parse(env.payload)
        self.reached = self.reached or rec.index <= self.rng.first_index
        if self.rng.first_index <= rec.index <= self.rng.last_index:
            self.by_id[rec.message_id] = mapped(RangeMessage, rec)

    def on_edited(self, env: EventEnvelope) -> None:
        edit = MESSAGE_EDITED.parse(env.payload)
        if edit.message_id in self.by_id:
            self.by_id[edit.message_id] = replace(self.by_id[edit.message_id], content=edit.content)

    def on_deleted(self, env: EventEnvelope) -> None:
        self.by_id.pop(MESSAGE_DELETED.parse(env.payload).message_id, None)


_FOLD_RANGE: dict[str, Callable[[_RangeFold, EventEnvelope], None]] = {
    MESSAGE_RECORDED.name: _RangeFold.on_recorded,
    MESSAGE_EDITED.name: _RangeFold.on_edited,
    MESSAGE_DELETED.name: _RangeFold.on_deleted,
}


def fold_range(events: Sequence[EventEnvelope], rng: SummaryRange) -> tuple[list[RangeMessage], bool]:
    """The range's live messages (edits applied, deletions removed), sorted by index, and whether the window
    reached back far enough (it holds the recording of a message at or before ``rng.first_index``)."""
    fold = _RangeFold(rng)
    for env in sorted(events, key=lambda e: e.version):
        on_event = _FOLD_RANGE.get(env.type)
        if on_event is not None:
            on_event(fold, env)
    return sorted(fold.by_id.values(), key=lambda m: m.index), fold.reached


def recorded_tokens(events: Sequence[EventEnvelope], first_index: int, last_index: int) -> list[int]:
    """The recorded token estimates of messages ``first_index .. last_index`` in index order (the token
    trigger's input). Edits and deletions are ignored on purpose: the estimate as recorded is fixed in the
    log, so the ranges it decides never move. A message missing from the window counts 0."""
    tokens = dict.fromkeys(range(first_index, last_index + 1), 0)
    for env in events:
        if env.type == MESSAGE_RECORDED.name:  # a filter: only recordings carry token estimates
            rec = MESSAGE_RECORDED.parse(env.payload)
            if rec.index in tokens:
                tokens[rec.index] = rec.tokens
    return [tokens[i] for i in range(first_index, last_index + 1)]
