"""The conversation timeline ingest decides swipes and forks on: a fold of the log stream, idempotent by version."""

from __future__ import annotations

from datetime import UTC, datetime

from mnemo.shared.aggregates.conversation import (
    ConversationState,
    KnownMessage,
    Timeline,
    fold,
    fold_tail,
    known_from_events,
)
from mnemo.shared.events.recorded import conversation_stream
from tests.envelopes import message_recorded, recorded

T0 = datetime(2026, 3, 1, tzinfo=UTC)
STREAM = conversation_stream("t1", "u1", "c1")


def events() -> list:
    base = {"user_id": "u1", "conversation_id": "c1"}
    return [
        message_recorded("t1", "u1", "c1", 0, "Hello.", created_at=T0),
        message_recorded("t1", "u1", "c1", 1, "First.", created_at=T0, role="assistant"),
        recorded("t1", STREAM, 3, "message.alternative_recorded",
                 {**base, "message_id": "s1", "swipe_of": "m1", "content": "Second.", "created_at": T0, "tokens": 1}, T0),
        recorded("t1", STREAM, 4, "message.edited",
                 {**base, "message_id": "m1", "content": "Second.", "edited_at": T0, "tokens": 1, "alternative_id": "s1"}, T0),
        recorded("t1", STREAM, 5, "message.edited",
                 {**base, "message_id": "m1", "content": "Second, edited.", "edited_at": T0, "tokens": 2}, T0),
        recorded("t1", STREAM, 6, "message.alternative_deleted",
                 {**base, "message_id": "m1", "swipe_of": "m1", "deleted_at": T0}, T0),
        recorded("t1", STREAM, 7, "message.deleted", {**base, "message_id": "m0", "deleted_at": T0}, T0),
    ]  # fmt: skip


def test_the_fold_tracks_alternatives_the_current_one_and_deletions() -> None:
    tl = Timeline().fold(events())
    slot = tl.slots["m1"]
    assert (slot.current, slot.texts["s1"]) == ("s1", "Second, edited."), "a plain edit edits the current one"
    assert (slot.texts["m1"], "m1" in tl.gone) == ("First.", True), "a deleted alternative keeps its text, flagged"
    assert list(slot.made) == ["m1", "s1"], "every alternative, in recorded order"
    assert tl.slot("s1") is slot
    assert tl.slot("m1") is None, "the deleted original cannot be selected"
    assert tl.slots["m0"].deleted
    assert [sid for sid, _ in tl.history(5)] == ["m1"]


def test_folding_again_or_out_of_order_changes_nothing() -> None:
    once = Timeline().fold(events())
    again = once.copy().fold(events()[2:])  # a catch-up tail the timeline already holds
    shuffled = Timeline().fold(list(reversed(events())))
    assert again == once
    assert shuffled == once


def test_a_catch_up_tail_folds_once_into_state_statuses_and_timeline_as_the_three_folds_do() -> None:
    start = ConversationState.for_stream(STREAM)
    head, tail = events()[:2], list(reversed(events()[2:]))  # a tail in any order, past what the timeline holds
    timeline = Timeline().fold(head)
    state, known = fold_tail(fold(start, head), tail, timeline)
    assert state == fold(start, events())
    assert (state.version, state.deleted_count, state.edit_count) == (7, 1, 2)
    assert known == known_from_events(tail)
    assert known["m0"] == KnownMessage(-1, deleted=True), "a deletion of a message recorded before the tail"
    assert timeline == Timeline().fold(events())
    assert fold_tail(state, [], None) == (state, {})
