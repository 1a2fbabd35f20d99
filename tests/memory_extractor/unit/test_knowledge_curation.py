"""Curation without I/O: exact and near-duplicate dedup, supersession at read time, the cap's consolidation."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from mnemo.shared.aggregates.knowledge import FactCandidate, subject_of
from mnemo.shared.aggregates.knowledge.curation import (
    Known,
    consolidated_fact,
    current,
    keep_fresh,
    merge_extractive,
    plan_consolidation,
)
from mnemo.shared.readmodels.knowledge import FactView, with_supersession

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def cand(text: str, character: str = "b1", user: str = "u1") -> FactCandidate:
    return FactCandidate(character, "bot", user, "c1", text, "semantic", 0.8, T0, ("m1",), "pattern")


def test_exact_duplicates_of_known_and_of_the_batch_are_dropped():
    known = {("b1", "u1"): Known({"ana lives in port vell"}, [])}
    cands = [cand("Ana lives in Port Vell!"), cand("Ana has a cat."), cand("ana has a CAT")]
    kept = keep_fresh(cands, [[1.0, 0.0]] * 3, known, threshold=2.0)
    assert [c.text for c in kept] == ["Ana has a cat."]
    assert "ana has a cat" in known[("b1", "u1")].texts


def test_near_duplicates_by_cosine_are_dropped_per_character_and_user():
    v = [1.0, 0.0]
    near = [0.95, 0.31224989991991997]  # cosine 0.95 with v
    far = [0.6, 0.8]  # cosine 0.6
    cands = [cand("A", "b1"), cand("B", "b1"), cand("C", "b1"), cand("D", "b2"), cand("E", "b1", user="u2")]
    kept = keep_fresh(cands, [v, near, far, near, near], {}, threshold=0.92)
    assert [c.text for c in kept] == ["A", "C", "D", "E"], "another character's or user's facts never count"


@dataclass(frozen=True)
class F:
    fact_id: str
    text: str
    learned_at: datetime
    character_id: str = "b1"
    fact_type: str = "declarative"
    tags: tuple[str, ...] = ()
    confidence: float = 0.8
    message_ids: tuple[str, ...] = ()

    @property
    def subject(self) -> str:
        return subject_of(self.text)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_newer_fact_with_same_subject_supersedes_at_read_time():
    old = F("f1", "Ana lives in Paris.", at(1))
    new = F("f2", "Ana lives in Rome.", at(2))
    other = F("f3", "Ana has a cat.", at(0))
    elsewhere = F("f4", "Ana lives in Oslo.", at(3), character_id="b2")
    assert [f.fact_id for f in current([old, new, other, elsewhere])] == ["f4", "f2", "f3"]


def view(fact_id: str, text: str, minutes: int, status: str = "active") -> FactView:
    return FactView(
        fact_id, "t1", "u1", "b1", "bot", "c1", text, subject_of(text), "declarative", (), 0.8, at(minutes),
        "player:u1", (), "pattern", None, status,
    )  # fmt: skip


def test_read_model_marks_superseded_facts():
    out = with_supersession([view("f1", "Ana lives in Paris.", 1), view("f2", "Ana lives in Rome.", 2)])
    assert [(v.fact_id, v.status) for v in out] == [("f2", "active"), ("f1", "superseded")]


def test_within_the_cap_nothing_is_consolidated():
    facts = [F(f"f{i}", f"Fact number {i} happened.", at(i)) for i in range(5)]
    assert plan_consolidation(facts, cap=5) == []


def test_over_the_cap_the_oldest_same_subject_facts_are_grouped():
    ana = [F(f"a{i}", f"Ana has item {i}.", at(i)) for i in range(4)]
    bo = [F(f"b{i}", f"Bo is a knight number {i}.", at(10 + i)) for i in range(3)]
    groups = plan_consolidation(ana + bo, cap=5, at_least=4)
    assert [[f.fact_id for f in g] for g in groups] == [["a0", "a1", "a2", "a3"]]
    left = len(ana + bo) - sum(len(g) - 1 for g in groups)
    assert left <= 5


def test_when_groups_do_not_free_enough_room_the_oldest_all_become_one():
    facts = [F(f"f{i}", f"Thing {i} happened at dawn.", at(i)) for i in range(12)]
    groups = plan_consolidation(facts, cap=3, at_least=2)
    assert len(groups) == 1
    assert [f.fact_id for f in groups[0]] == [f"f{i}" for i in range(10)]
    assert len(facts) - (len(groups[0]) - 1) <= 3


def test_consolidated_fact_keeps_every_statement_and_points_at_the_folded_facts():
    group = [
        F("a1", "Ana has a cat.", at(1), tags=("x",), message_ids=("m1",)),
        F("a2", "Ana lives in Rome", at(2), confidence=0.6, message_ids=("m2", "m1")),
    ]
    text = merge_extractive(group)
    assert text == "Ana has a cat. Ana lives in Rome."
    fact = consolidated_fact("t1", group, character_kind="bot", user_id="u1", conversation_id="c1", text=text)
    assert fact.consolidates == ["a1", "a2"]
    assert fact.message_ids == ["m1", "m2"]
    assert (fact.confidence, fact.learned_at, fact.scope, fact.method) == (0.6, at(2), "player:u1", "extractive")
    assert fact.subject.startswith("ana:consolidated:"), "never supersedes another fact"
    assert fact.tags == ["x", "consolidated"]
    again = consolidated_fact(
        "t1", list(reversed(group)), character_kind="bot", user_id="u1", conversation_id="c1", text="y"
    )
    assert again.fact_id == fact.fact_id, "deterministic over the folded facts"
