"""Fact vectors (pure): the embedding plan for knowledge events, and the assembler's fact filter and order."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from mnemo.services.context_assembler.items import KnowledgeItem
from mnemo.services.context_assembler.search.filters import facts_filter
from mnemo.services.context_assembler.search.hits import relevant_first
from mnemo.services.embedding.domain import HANDLERS, plan_batch
from mnemo.services.embedding.facts import FactState, fact_ids_touched
from mnemo.services.embedding.plan import Plan
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    FactLearned,
    FactPromoted,
    FactRetired,
    FactsConsolidated,
    FactUnpromoted,
    knowledge_stream,
)
from mnemo.shared.vectors.points import FACT, facts_by_id, point_id
from mnemo.shared.vectors.port import Match, VectorFilter
from mnemo_client.wire.contract import ContextAssembleRequest
from tests.envelopes import numbered

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def envelope(version: int, type_: str, payload: dict[str, object], tenant: str = "t") -> EventEnvelope:
    return numbered(
        tenant, knowledge_stream(tenant, "bard"), version, type_, payload, T0, event_id=f"e-{type_}-{version}"
    )


def fact(fid: str, text: str = "Ana lives in Port Vell.", scope: str = "player:u", user: str = "u") -> FactLearned:
    return FactLearned(
        fact_id=fid,
        character_id="bard",
        character_kind="bot",
        user_id=user,
        conversation_id="c",
        text=text,
        subject=f"ana:{fid}",
        fact_type="semantic",
        confidence=0.9,
        learned_at=T0,
        scope=scope,
        message_ids=["m1"],
        method="pattern",
    )


def learned(fid: str, version: int, **kw: str) -> EventEnvelope:
    return envelope(version, "knowledge.fact_learned", fact(fid, **kw).model_dump(mode="json"))


def consolidated(fid: str, version: int, folds: list[str]) -> EventEnvelope:
    merged = FactsConsolidated(**fact(fid, text="Ana knows the harbour.").model_dump(), consolidates=folds)
    return envelope(version, "knowledge.facts_consolidated", merged.model_dump(mode="json"))


def retired(fid: str, version: int) -> EventEnvelope:
    r = FactRetired(fact_id=fid, character_id="bard", user_id="u", reason="deleted", message_id="m1", retired_at=T0)
    return envelope(version, "knowledge.fact_retired", r.model_dump(mode="json"))


def rescoped(fid: str, version: int, to_scope: str) -> EventEnvelope:
    promote = to_scope.startswith("campaign:")
    model = FactPromoted if promote else FactUnpromoted
    frm = "player:u" if promote else "campaign:k"
    c = model(
        fact_id=fid, character_id="bard", owner_user_id="u", by_user_id="u", from_scope=frm, to_scope=to_scope, at=T0
    )
    return envelope(
        version, "knowledge.fact_promoted" if promote else "knowledge.fact_unpromoted", c.model_dump(mode="json")
    )


def state(fid: str, scope: str = "player:u", version: int = 1, current: bool = True) -> FactState:
    return FactState(fid, "u", "bard", f"stored text of {fid}", scope, version, current)


def plan(events: list[EventEnvelope], states: dict[tuple[str, str], FactState] | None = None) -> Plan:
    return plan_batch(events, {}, model="m", chunker=lambda s: [s], facts=states if states is not None else {})


def scopes(p: Plan) -> dict[str, object]:
    return {str(pt.payload["fact_id"]): pt.payload["scope"] for pt in p.points}


def test_a_learned_fact_is_one_point_for_its_character_only() -> None:
    p = plan([learned("f1", 1)])
    assert p.deletions == []
    [pt] = p.points
    assert pt.id == point_id(FACT, "t", "u", "", "f1", 0)
    assert pt.text == "Ana lives in Port Vell."
    assert pt.payload == {
        "tenant_id": "t",
        "user_id": "u",
        "kind": "fact",
        "fact_id": "f1",
        "source_id": "f1",
        "character_id": "bard",
        "audience": ["bard"],
        "scope": "player:u",
        "model": "m",
        "chunk": 0,
    }


def test_facts_are_not_indexed_without_the_knowledge_read_model() -> None:
    assert plan_batch([learned("f1", 1)], {}, model="m", chunker=lambda s: [s]).points == []


def test_retirement_deletes_and_a_fact_retired_in_the_same_batch_is_not_indexed() -> None:
    p = plan([learned("f1", 1), learned("f2", 2), retired("f1", 3)])
    assert p.deletions == [facts_by_id("t", ["f1"])]
    assert list(scopes(p)) == ["f2"]


def test_a_late_redelivered_creation_of_a_retired_fact_stays_out() -> None:
    p = plan([learned("f1", 1)], {("t", "f1"): state("f1", current=False)})
    assert p.points == []


def test_consolidation_indexes_the_merged_fact_and_deletes_the_folded_ones() -> None:
    p = plan([learned("a", 1), learned("b", 2), consolidated("m", 3, ["a", "b"])])
    assert p.deletions == [facts_by_id("t", ["a", "b"])]
    assert list(scopes(p)) == ["m"]
    assert p.points[0].text == "Ana knows the harbour."


def test_a_promotion_rewrites_the_point_with_the_new_scope_and_the_stored_text() -> None:
    p = plan([rescoped("f1", 2, "campaign:k")], {("t", "f1"): state("f1", "campaign:k", 2)})
    [pt] = p.points
    assert pt.id == point_id(FACT, "t", "u", "", "f1", 0)  # same id: an overwrite
    assert pt.payload["scope"] == "campaign:k"
    assert pt.text == "stored text of f1"
    assert p.deletions == []


def test_the_newest_scope_wins_against_late_redeliveries() -> None:
    # The read model already holds the undo (version 3): a redelivered promotion (2) does not restore it.
    undone = {("t", "f1"): state("f1", "player:u", 3)}
    assert scopes(plan([rescoped("f1", 2, "campaign:k")], undone)) == {"f1": "player:u"}
    # A creation redelivered after its promotion keeps the promoted scope.
    promoted = {("t", "f1"): state("f1", "campaign:k", 2)}
    assert scopes(plan([learned("f1", 1)], promoted)) == {"f1": "campaign:k"}
    # The read model lagging behind the batch: the batch's newer event wins.
    lagging = {("t", "f1"): state("f1", "player:u", 1)}
    assert scopes(plan([rescoped("f1", 2, "campaign:k")], lagging)) == {"f1": "campaign:k"}
    # Promotion and undo in one batch: the last one counts.
    both = [rescoped("f1", 2, "campaign:k"), rescoped("f1", 3, "player:u")]
    assert scopes(plan(both, lagging)) == {"f1": "player:u"}


def test_a_scope_change_of_an_unknown_or_retired_fact_indexes_nothing() -> None:
    assert plan([rescoped("f1", 2, "campaign:k")]).points == []
    assert plan([rescoped("f1", 2, "campaign:k")], {("t", "f1"): state("f1", current=False)}).points == []


def test_touched_ids_include_the_folded_facts_per_tenant() -> None:
    events = [
        consolidated("m", 3, ["a", "b"]),
        envelope(1, "knowledge.fact_learned", fact("x").model_dump(mode="json"), "t2"),
    ]
    assert fact_ids_touched(events) == {"t": {"m", "a", "b"}, "t2": {"x"}}


def test_an_invalid_fact_payload_is_reported() -> None:
    bad = envelope(1, "knowledge.fact_retired", {"fact_id": "f1"})
    [(reported, reason)] = HANDLERS.sort({}, [bad, learned("f1", 1)])
    assert reported is bad
    assert "invalid knowledge.fact_retired payload" in reason


def request(campaign: str | None = None) -> ContextAssembleRequest:
    return ContextAssembleRequest(
        tenant_id="t", user_id="u", conversation_id="c", bot_id="bard", user_message="hi", campaign_id=campaign
    )


def test_the_fact_filter_is_the_bot_itself_and_the_visible_scopes() -> None:
    assert facts_filter(request()) == VectorFilter(
        must=(
            Match("tenant_id", ("t",)),
            Match("kind", ("fact",)),
            Match("audience", ("bard",)),
            Match("scope", ("player:u", "character:bard")),
        )
    )
    assert facts_filter(request("k")).must[-1] == Match("scope", ("player:u", "character:bard", "campaign:k"))


def items(*ids: str) -> list[KnowledgeItem]:
    return [KnowledgeItem(i, f"text {i}", ()) for i in ids]


def test_found_facts_come_first_then_the_rest_newest_first() -> None:
    facts = items("n1", "n2", "n3", "n4")  # newest first
    out = relevant_first(facts, {"n3": 0.6, "n1": 0.4}, 3)
    assert [f.fact_id for f in out] == ["n3", "n1", "n2"]
    assert [f.score for f in out] == [0.6, 0.4, 0.0], "the search ran: a fact it did not find scores 0"
    unjudged = relevant_first(facts, {}, 2, searched=False)
    assert [(f.fact_id, f.score) for f in unjudged] == [("n1", None), ("n2", None)], "no search: no score"


def test_found_ids_not_among_the_current_facts_are_ignored() -> None:
    facts = items("n1", "n2")
    assert [f.fact_id for f in relevant_first(facts, {"gone": 0.9, "n2": 0.5}, 5)] == ["n2", "n1"]
    assert relevant_first(facts, {"n1": 0.5}, 0) == []


@pytest.mark.parametrize("seed", range(20))
def test_ordering_is_a_permutation_prefix_of_the_current_facts(seed: int) -> None:
    rnd = random.Random(seed)
    facts = items(*(f"f{i}" for i in range(rnd.randint(0, 12))))
    found = [f"f{rnd.randint(0, 15)}" for _ in range(rnd.randint(0, 8))]
    limit = rnd.randint(0, 14)
    out = [f.fact_id for f in relevant_first(facts, dict.fromkeys(found, 0.5), limit)]
    current = [f.fact_id for f in facts]
    assert len(out) == min(limit, len(facts))
    assert len(set(out)) == len(out)
    assert set(out) <= set(current)
    expected_first = [i for i in dict.fromkeys(found) if i in current]
    assert out == [*expected_first, *(i for i in current if i not in expected_first)][:limit]
