"""``fold_swipes``: a conversation's alternatives from its log events (recorded, selected, edited, deleted), as
ingest records them: a new alternative is followed by the ``message.edited`` that selects it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from mnemo.services.memory.domain import fold_swipes
from mnemo.shared.events.envelope import EventEnvelope

T0 = datetime(2026, 11, 1, tzinfo=UTC)
BASE = {"user_id": "u1", "conversation_id": "c1"}


def event(version: int, kind: str, **payload: Any) -> EventEnvelope:
    return EventEnvelope(
        event_id=f"e{version}", type=kind, schema_version=2 if kind == "message.recorded" else 1,
        stream_id="conversation/t1/u1/c1", version=version, tenant_id="t1", occurred_at=T0, recorded_at=T0,
        payload={**BASE, **payload},
    )  # fmt: skip


def recorded(version: int, message_id: str, content: str, index: int) -> EventEnvelope:
    return event(
        version, "message.recorded", message_id=message_id, role="assistant", author_id="b1", author_name="B",
        content=content, created_at=T0, bot_ids=["b1"], persona_id=None, index=index, tokens=3,
    )  # fmt: skip


def alternative(version: int, message_id: str, of: str, content: str) -> EventEnvelope:
    return event(
        version, "message.alternative_recorded", message_id=message_id, swipe_of=of, content=content,
        created_at=T0, tokens=3,
    )  # fmt: skip


def edited(version: int, message_id: str, content: str, alternative_id: str | None = None) -> EventEnvelope:
    return event(
        version, "message.edited", message_id=message_id, content=content, edited_at=T0, tokens=3,
        alternative_id=alternative_id,
    )  # fmt: skip


def swiped(version: int, message_id: str, of: str, content: str) -> list[EventEnvelope]:
    """A new alternative and its selection (``branches.swipe_created``)."""
    return [alternative(version, message_id, of, content), edited(version + 1, of, content, alternative_id=message_id)]


def test_only_swiped_messages_with_the_current_one_marked() -> None:
    events = [recorded(1, "m1", "hello", 0), recorded(2, "m2", "first", 1), *swiped(3, "s1", "m2", "second")]
    swipes = fold_swipes(events)
    assert list(swipes) == ["m2"]
    assert [(a.message_id, a.content, a.current) for a in swipes["m2"]] == [
        ("m2", "first", False),
        ("s1", "second", True),
    ]


def test_a_selection_an_edit_of_the_current_one_and_a_deletion() -> None:
    events = [recorded(1, "m2", "first", 0), *swiped(2, "s1", "m2", "second"), *swiped(4, "s2", "m2", "third")]
    events += [edited(6, "m2", "first", alternative_id="m2"), edited(7, "m2", "first, edited")]
    events += [event(8, "message.alternative_deleted", message_id="s1", swipe_of="m2", deleted_at=T0)]
    (alternatives,) = fold_swipes(events).values()
    assert [(a.message_id, a.content, a.current, a.deleted) for a in alternatives] == [
        ("m2", "first, edited", True, False),
        ("s1", "second", False, True),
        ("s2", "third", False, False),
    ]


def test_an_edit_of_the_current_alternative_shows_its_new_text() -> None:
    """``branches.alternative_edited`` records the edit with the alternative's id: the history shows the new text,
    so its alternative does too (the memory service's own fold kept the text it was recorded with)."""
    events = [recorded(1, "m2", "first", 0), *swiped(2, "s1", "m2", "second")]
    events += [edited(4, "m2", "second, edited", alternative_id="s1")]
    (alternatives,) = fold_swipes(events).values()
    assert [(a.message_id, a.content, a.current) for a in alternatives] == [
        ("m2", "first", False),
        ("s1", "second, edited", True),
    ]
