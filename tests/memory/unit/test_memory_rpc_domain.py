"""The memory service's pure decisions: emotional tags, the legacy entry a memory becomes, a memory's state
from its stream, and the deterministic events that make convert and delete idempotent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from mnemo.shared.aggregates import legacy_lore, summaries
from mnemo.shared.events.recorded import (
    LegacyLoreCreated,
    LegacyLoreDeleted,
    SummaryCreated,
    SummaryRetired,
    summary_stream,
)
from mnemo_client.wire.memory_contract import MemoryConvertToLoreRequest
from tests.envelopes import recorded

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def memory(summary_id: str = "s1", **over: Any) -> SummaryCreated:
    base: dict[str, Any] = {
        "summary_id": summary_id,
        "user_id": "u1",
        "conversation_id": "c1",
        "summary_type": "long_term",
        "text": "They found the lost map in the lighthouse.",
        "importance": 8,
        "participants": ["bot-a", "p-1"],
        "start_at": T0,
        "end_at": T0 + timedelta(days=2),
        "message_ids": ["m1", "m2"],
        "first_index": 0,
        "last_index": 1,
        "method": "llm:gpt-x",
        "prompt_version": "summarize.v1",
        "emotional_context": "Anxious, then triumphant -> giddy",
    }
    return SummaryCreated.model_validate(base | over)


def request(**over: Any) -> MemoryConvertToLoreRequest:
    base: dict[str, Any] = {"tenant_id": "t1", "user_id": "u1", "memory_id": "s1",
                            "applies_to_bots": ["bot-b", "bot-a", "bot-b"], "applies_to_personas": ["p-1"]}  # fmt: skip
    return MemoryConvertToLoreRequest.model_validate(base | over)


@pytest.mark.parametrize(
    ("context", "tags"),
    [
        (None, []),
        ("", []),
        ("tense", ["tense"]),
        ("Anxious, then triumphant -> giddy", ["anxious", "triumphant", "giddy"]),
        ("warm; playful / teasing", ["warm", "playful", "teasing"]),
        ("calm and hopeful, but wary.", ["calm", "hopeful", "wary"]),
        ("Sad, sad, SAD!", ["sad"]),
        ("grief → acceptance\nrelief", ["grief", "acceptance", "relief"]),
        ("  ,  ;  ", []),
        ("a quietly   growing dread", ["a quietly growing dread"]),
    ],
)
def test_emotional_context_splits_into_clean_tags(context: str | None, tags: list[str]) -> None:
    assert legacy_lore.split_tags(context) == tags


def test_tags_are_capped_in_number_and_length() -> None:
    many = ", ".join(f"mood{i}" for i in range(40))
    assert legacy_lore.split_tags(many) == [f"mood{i}" for i in range(legacy_lore.MAX_TAGS)]
    assert legacy_lore.split_tags("x" * 500) == ["x" * legacy_lore.MAX_TAG_CHARS]


def test_a_legacy_entry_keeps_the_memory_and_applies_to_the_chosen_characters() -> None:
    entry = legacy_lore.legacy_entry("t1", request(title="The map"), memory(), T0)
    assert entry.legacy_id == legacy_lore.legacy_id_for("t1", "u1", "s1")
    assert (entry.memory_id, entry.conversation_id, entry.entry_type) == ("s1", "c1", "legacy_memory")
    assert (entry.text, entry.title) == ("They found the lost map in the lighthouse.", "The map")
    assert (entry.participants, entry.importance) == (["bot-a", "p-1"], 8)
    assert (entry.start_at, entry.end_at) == (T0, T0 + timedelta(days=2))
    assert entry.emotional_tags == ["anxious", "triumphant", "giddy"]
    assert (entry.applies_to_bots, entry.applies_to_personas) == (["bot-a", "bot-b"], ["p-1"])
    assert (entry.summary_type, entry.method, entry.prompt_version) == ("long_term", "llm:gpt-x", "summarize.v1")


def test_the_reviewer_s_tags_and_importance_replace_the_memory_s() -> None:
    chosen = request(tags=["  Lighthouse  Keeper", "map", "MAP", "a\tb"], importance=3)
    entry = legacy_lore.legacy_entry("t1", chosen, memory(), T0)
    assert (entry.emotional_tags, entry.importance) == (["lighthouse keeper", "map", "a b"], 3)
    cleared = legacy_lore.legacy_entry("t1", request(tags=[]), memory(), T0)
    assert (cleared.emotional_tags, cleared.importance) == ([], 8)
    edited = legacy_lore.legacy_entry(
        "t1", request(text="The map, redrawn.", participants=["p-1", "bot-c", "p-1"]), memory(), T0
    )
    assert (edited.text, edited.participants) == ("The map, redrawn.", ["p-1", "bot-c"])


@pytest.mark.parametrize("over", [{"importance": 0}, {"importance": 11}, {"tags": [""]}, {"tags": ["x" * 65]},
                                  {"tags": [f"t{i}" for i in range(33)]},
                                  {"text": ""}, {"text": "x" * 20_001}])  # fmt: skip
def test_out_of_range_tags_and_importance_are_refused(over: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        request(**over)


def test_legacy_ids_are_deterministic_and_scoped_to_tenant_and_user() -> None:
    ids = {
        legacy_lore.legacy_id_for("t1", "u1", "s1"),
        legacy_lore.legacy_id_for("t2", "u1", "s1"),
        legacy_lore.legacy_id_for("t1", "u2", "s1"),
        legacy_lore.legacy_id_for("t1", "u1", "s2"),
    }
    assert len(ids) == 4
    assert legacy_lore.legacy_id_for("t1", "u1", "s1") == legacy_lore.legacy_id_for("t1", "u1", "s1")


def test_events_have_ids_that_make_retries_duplicates() -> None:
    entry = legacy_lore.legacy_entry("t1", request(), memory(), T0)
    later = legacy_lore.legacy_entry("t1", request(applies_to_bots=["bot-z"]), memory(), T0 + timedelta(hours=1))
    created, again = legacy_lore.legacy_created_event("t1", entry), legacy_lore.legacy_created_event("t1", later)
    assert created.event_id == again.event_id, "a second conversion is the same event: the log keeps the first"
    assert LegacyLoreCreated.model_validate(created.payload) == entry

    deleted = legacy_lore.legacy_deleted_event("t1", "u1", "s1", T0)
    assert deleted.event_id == legacy_lore.legacy_deleted_event("t1", "u1", "s1", T0 + timedelta(days=1)).event_id
    assert LegacyLoreDeleted.model_validate(deleted.payload).legacy_id == entry.legacy_id

    retired = summaries.memory_deleted_event("t1", memory(), T0)
    assert retired.type == "summary.retired"
    assert SummaryRetired.model_validate(retired.payload).reason == "deleted"
    assert retired.event_id == summaries.memory_deleted_event("t1", memory(), T0 + timedelta(days=1)).event_id
    assert len({created.event_id, deleted.event_id, retired.event_id}) == 3


def _stream(*events: tuple[str, dict[str, Any]]) -> list[Any]:
    stream = summary_stream("t1", "u1", "c1")
    return [recorded("t1", stream, i + 1, type_, payload, T0) for i, (type_, payload) in enumerate(events)]


def _retired(summary_id: str, reason: str) -> tuple[str, dict[str, Any]]:
    payload = {"summary_id": summary_id, "user_id": "u1", "conversation_id": "c1", "reason": reason,
               "retired_at": T0.isoformat()}  # fmt: skip
    return ("summary.retired", payload)


def test_memory_state_folds_only_that_summary() -> None:
    s1, s2 = memory("s1").model_dump(mode="json"), memory("s2").model_dump(mode="json")
    events = _stream(("summary.created", s1), ("summary.created", s2), _retired("s2", "deleted"))
    state = summaries.memory_state(events, "s1")
    assert state is not None
    assert (state.created.summary_id, state.deleted, state.retired_reason) == ("s1", False, None)
    gone = summaries.memory_state(events, "s2")
    assert gone is not None
    assert gone.deleted
    assert gone.retired_reason == "deleted"
    assert summaries.memory_state(events, "s3") is None


def test_deletion_wins_over_a_later_retirement() -> None:
    s1 = memory("s1").model_dump(mode="json")
    events = _stream(("summary.created", s1), _retired("s1", "deleted"), _retired("s1", "consolidated"))
    state = summaries.memory_state(events, "s1")
    assert state is not None
    assert state.deleted
    assert state.retired_reason == "deleted"
    consolidated = summaries.memory_state(_stream(("summary.created", s1), _retired("s1", "consolidated")), "s1")
    assert consolidated is not None
    assert not consolidated.deleted
    assert consolidated.retired_reason == "consolidated"


def test_a_conversion_must_name_someone_it_applies_to() -> None:
    with pytest.raises(ValueError, match="applies_to"):
        request(applies_to_bots=[], applies_to_personas=[])
