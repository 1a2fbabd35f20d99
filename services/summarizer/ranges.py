"""Pure: the messages of a summary range, folded from a window of the conversation's log stream.

Why the log and not the messages read model: the summarizer reacts to a relayed ``message.recorded``, and the
log is guaranteed to hold every event up to that event's version, while a read model may still lag behind
the relay (a crash between append and projection). Reading the window of the stream that ends at the
triggering event's version gives the same answer on every redelivery: later edits and deletions are not
seen, so a redelivered message produces the very same summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from services.summarizer.domain import RangeMessage, SummaryRange
from shared.events.envelope import EventEnvelope
from shared.events.recorded import (
    MESSAGE_DELETED,
    MESSAGE_EDITED,
    MESSAGE_RECORDED,
    MessageDeleted,
    MessageEdited,
    MessageRecorded,
)


def window_start(trigger_version: int, rng: SummaryRange, factor: int) -> int:
    """``after_version`` of a window ``factor`` times the range size (plus slack for edits and deletes)."""
    span = rng.last_index - rng.first_index + 1
    return max(0, trigger_version - factor * (span + 4))


def fold_range(events: Sequence[EventEnvelope], rng: SummaryRange) -> tuple[list[RangeMessage], bool]:
    """The range's live messages (edits applied, deletions removed), sorted by index, and whether the window
    reached back far enough (it holds the recording of a message at or before ``rng.first_index``)."""
    by_id: dict[str, RangeMessage] = {}
    reached = False
    for env in sorted(events, key=lambda e: e.version):
        if env.type == MESSAGE_RECORDED.name:
            rec = MessageRecorded.model_validate(env.payload)
            reached = reached or rec.index <= rng.first_index
            if rng.first_index <= rec.index <= rng.last_index:
                by_id[rec.message_id] = RangeMessage(
                    message_id=rec.message_id,
                    index=rec.index,
                    role=rec.role,
                    author_name=rec.author_name,
                    content=rec.content,
                    created_at=rec.created_at,
                    bot_ids=tuple(rec.bot_ids),
                    persona_id=rec.persona_id,
                )
        elif env.type == MESSAGE_EDITED.name:
            edit = MessageEdited.model_validate(env.payload)
            if edit.message_id in by_id:
                by_id[edit.message_id] = replace(by_id[edit.message_id], content=edit.content)
        elif env.type == MESSAGE_DELETED.name:
            by_id.pop(MessageDeleted.model_validate(env.payload).message_id, None)
    return sorted(by_id.values(), key=lambda m: m.index), reached


def recorded_tokens(events: Sequence[EventEnvelope], first_index: int, last_index: int) -> list[int]:
    """The recorded token estimates of messages ``first_index .. last_index`` in index order (the token
    trigger's input). Edits and deletions are ignored on purpose: the estimate as recorded is fixed in the
    log, so the ranges it decides never move. A message missing from the window counts 0."""
    tokens = dict.fromkeys(range(first_index, last_index + 1), 0)
    for env in events:
        if env.type == MESSAGE_RECORDED.name:
            rec = MessageRecorded.model_validate(env.payload)
            if rec.index in tokens:
                tokens[rec.index] = rec.tokens
    return [tokens[i] for i in range(first_index, last_index + 1)]
