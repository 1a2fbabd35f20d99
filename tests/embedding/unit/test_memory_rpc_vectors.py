"""The embedding plan for legacy lore: points embedded with their metadata, filterable by ``applies_to``, and
the last event of an entry in a batch deciding between indexing and deleting it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from mnemo.services.embedding.domain import plan_batch
from mnemo.services.embedding.legacy_memories import legacy_header
from mnemo.shared.events.recorded import LegacyLoreCreated, legacy_lore_stream
from mnemo.shared.vectors.points import LEGACY_MEMORY, legacy_by_id, point_id
from mnemo.shared.vectors.port import Match
from tests.envelopes import recorded

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def entry(**over: Any) -> LegacyLoreCreated:
    base: dict[str, Any] = {
        "legacy_id": "L1",
        "user_id": "u1",
        "memory_id": "s1",
        "conversation_id": "c1",
        "text": "first part. second part.",
        "participants": ["bot-a", "p-1"],
        "start_at": T0,
        "end_at": T0 + timedelta(days=1),
        "importance": 6,
        "emotional_tags": ["tense", "relieved"],
        "applies_to_bots": ["bot-b"],
        "applies_to_personas": ["p-1"],
        "summary_type": "short_term",
        "method": "extractive",
        "created_at": T0,
    }
    return LegacyLoreCreated.model_validate(base | over)


def events(*rows: tuple[str, dict[str, Any]]) -> list[Any]:
    stream = legacy_lore_stream("t1", "u1", "L1")
    return [recorded("t1", stream, n + 1, type_, payload, T0) for n, (type_, payload) in enumerate(rows)]


CREATED = ("legacy_lore.created", entry().model_dump(mode="json"))
DELETED = ("legacy_lore.deleted",
           {"legacy_id": "L1", "user_id": "u1", "memory_id": "s1", "deleted_at": T0.isoformat()})  # fmt: skip


def split(text: str) -> list[str]:
    return [p.strip() + "." for p in text.split(".") if p.strip()]


def test_header_names_participants_dates_mood_and_title() -> None:
    assert legacy_header(entry()) == "Memory of bot-a, p-1, 2026-03-01 to 2026-03-02, mood: tense, relieved"
    same_day = entry(end_at=T0 + timedelta(hours=1), emotional_tags=[], title="The map")
    assert legacy_header(same_day) == "The map. Memory of bot-a, p-1, 2026-03-01"


def test_created_entries_become_points_with_their_metadata() -> None:
    plan = plan_batch(events(CREATED), {}, model="m", chunker=split)
    assert plan.deletions == []
    assert [p.text for p in plan.points] == [
        f"{legacy_header(entry())}\nfirst part.",
        f"{legacy_header(entry())}\nsecond part.",
    ]
    first = plan.points[0]
    assert first.id == point_id(LEGACY_MEMORY, "t1", "u1", "", "L1", 0)
    assert first.payload == {
        "tenant_id": "t1",
        "user_id": "u1",
        "conversation_id": "c1",
        "kind": "legacy_memory",
        "source_id": "L1",
        "legacy_id": "L1",
        "memory_id": "s1",
        "applies_to": ["bot-b", "p-1"],
        "participants": ["bot-a", "p-1"],
        "importance": 6,
        "start_at": T0.timestamp(),
        "end_at": (T0 + timedelta(days=1)).timestamp(),
        "created_at": (T0 + timedelta(days=1)).timestamp(),
        "model": "m",
        "chunk": 0,
    }


def test_the_last_event_of_an_entry_in_a_batch_wins() -> None:
    deleted = plan_batch(events(CREATED, DELETED), {}, model="m", chunker=split)
    assert deleted.points == []
    assert deleted.deletions == [legacy_by_id("t1", "u1", "L1")]
    flt = deleted.deletions[0]
    assert Match("kind", ("legacy_memory",)) in flt.must
    assert Match("tenant_id", ("t1",)) in flt.must


def test_an_empty_text_still_indexes_its_header() -> None:
    plan = plan_batch(events(("legacy_lore.created", entry(text="").model_dump(mode="json"))), {}, model="m",
                      chunker=split)  # fmt: skip
    assert [p.text for p in plan.points] == [f"{legacy_header(entry())}\n"]


def test_a_creation_of_an_entry_already_deleted_is_not_indexed_again() -> None:
    """A late redelivery of ``legacy_lore.created`` after the entry was deleted (the read model says so)."""
    plan = plan_batch(events(CREATED), {}, model="m", chunker=split, deleted_legacy={"L1"})
    assert plan.points == []
    assert plan.deletions == []
