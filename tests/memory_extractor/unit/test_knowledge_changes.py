"""The knowledge aggregate's deciders of changes, on a fact's state with the clock passed in: by hand (add, edit,
retract, promote, unpromote) and after a message's edit or delete (retire, consolidate again)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from mnemo.shared.aggregates.knowledge import FactNotFound, NotAllowed, changes, revisions
from mnemo.shared.events.envelope import NewEvent
from mnemo.shared.readmodels.knowledge import FactView
from mnemo_client.wire.knowledge_contract import FactAddRequest, FactEditRequest, FactRetractRequest

NOW = datetime(2026, 3, 1, tzinfo=UTC)
FACT = FactView(
    "f1", "t1", "u1", "b1", "bot", "c1", "Ana lives in Rome.", "ana:home", "declarative", ("place",), 0.8,
    datetime(2026, 1, 1, tzinfo=UTC), "player:u1", ("m1",), "pattern", None, "active", causation_id="e0",
)  # fmt: skip


def test_an_added_fact_is_learned_at_the_given_time_once():
    req = FactAddRequest(tenant_id="t1", user_id="u1", character_id="b1", text="Ana has a cat.")
    [event] = changes.add(req, None, NOW)
    assert (event.type, event.occurred_at, event.payload["method"]) == ("knowledge.fact_learned", NOW, "manual:u1")
    assert event.payload["fact_id"] == changes.added_id(req)
    assert event.payload["scope"] == "player:u1"
    assert changes.add(req, replace(FACT, fact_id=changes.added_id(req)), NOW) == []
    with pytest.raises(NotAllowed):
        changes.add(req, replace(FACT, user_id="u2"), NOW)
    with pytest.raises(NotAllowed):
        changes.checked_scope(req.model_copy(update={"scope": "player:u2"}))


def test_an_edit_retires_the_old_version_and_learns_the_new_keeping_the_rest():
    req = FactEditRequest(tenant_id="t1", user_id="u1", fact_id="f1", text="Ana lives in Paris.")
    retired, learned = changes.edit(req, FACT, NOW)
    assert (retired.payload["reason"], retired.payload["retired_at"]) == (
        "edited",
        NOW.isoformat().replace("+00:00", "Z"),
    )
    assert learned.payload["fact_id"] == changes.edited_id(req)
    assert learned.payload["revises"] == "f1"
    assert (learned.payload["text"], learned.payload["tags"], learned.payload["scope"]) == (
        "Ana lives in Paris.", ["place"], "player:u1",
    )  # fmt: skip


def test_only_the_owner_changes_a_current_fact_and_a_retired_one_is_retracted_once():
    with pytest.raises(FactNotFound):
        changes.owned(FACT, "u2", "f1")
    with pytest.raises(NotAllowed, match="only current facts can be edited"):
        changes.changeable(replace(FACT, status="consolidated"), "u1", "f1", "can be edited")
    req = FactRetractRequest(tenant_id="t1", user_id="u1", fact_id="f1")
    [event] = changes.retract(req, FACT, NOW)
    assert event.payload["reason"] == "retracted"
    assert event.payload["by_user_id"] == "u1"
    assert changes.retract(req, replace(FACT, status="retired"), NOW) == []


def _moved(fact: FactView, to_scope: str, *, promote: bool = True) -> NewEvent | None:
    return changes.scope_change("t1", fact, by_user_id="u1", to_scope=to_scope, promote=promote, at=NOW, event_id="e1")


def test_a_scope_change_in_effect_records_nothing_and_only_a_players_fact_is_promoted():
    event = _moved(FACT, "campaign:k")
    assert event is not None
    assert (event.type, event.event_id, event.occurred_at) == ("knowledge.fact_promoted", "e1", NOW)
    assert _moved(replace(FACT, scope="campaign:k"), "campaign:k") is None
    with pytest.raises(NotAllowed):
        _moved(replace(FACT, scope="campaign:j"), "campaign:k")
    with pytest.raises(NotAllowed):
        _moved(replace(FACT, scope="character:b1"), "player:u1", promote=False)


def test_a_message_change_retires_what_it_taught_before_and_reconsolidates_the_rest():
    taught_now = replace(FACT, fact_id="f2", causation_id="edit1")
    stale = revisions.stale_facts([FACT, taught_now], "edit1")
    assert stale == [FACT]
    [w] = revisions.retirements("t1", stale, message_id="m1", deleted=False, change_event_id="edit1", at=NOW)
    assert (w.stream_id, w.event.payload["reason"], w.event.causation_id) == ("knowledge/t1/b1", "stale", "edit1")
    assert revisions.reconsolidation("t1", FACT, [], change_event_id="edit1") is None
    again = revisions.reconsolidation("t1", FACT, [replace(FACT, fact_id="f3"), taught_now], change_event_id="edit1")
    assert again is not None
    assert again.event.payload["consolidates"] == ["f2", "f3"]
