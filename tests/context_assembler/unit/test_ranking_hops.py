"""The second hop inside the pool (mnemo/services/context_assembler/search/hops.py): a personalized PageRank
from the first hits over the terms the pool's turns share."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import mnemo.services.context_assembler.search.ranking as ranking
from mnemo.services.context_assembler.search.hops import hop_scores
from mnemo.services.context_assembler.search.levers import RankLevers
from mnemo.services.context_assembler.search.ranking import Candidate, rank_candidates, word_set


def test_a_turn_sharing_rare_words_with_the_first_hits_is_reached() -> None:
    words = {
        "hit": frozenset({"trip", "miami", "beach"}),
        "hit2": frozenset({"miami", "sunburn"}),
        "next": frozenset({"miami", "beach", "sunburn"}),  # shares the hits' words, not the question's
        "other": frozenset({"cat", "vet"}),
        "other2": frozenset({"cat", "food"}),
    }
    base = {"hit": 1.0, "hit2": 0.8, "next": 0.2, "other": 0.3, "other2": 0.25}
    hop = hop_scores(words, base, asked=frozenset({"trip"}), seeds=2)
    assert max(hop.values()) == 1.0
    assert hop["next"] > hop["other"] == hop["other2"] == 0.0


def test_the_questions_own_terms_and_single_turn_terms_link_nothing() -> None:
    words = {"a": frozenset({"kate", "book"}), "b": frozenset({"kate", "unique"}), "c": frozenset({"lonely"})}
    assert hop_scores(words, {"a": 1.0, "b": 0.1, "c": 0.5}, asked=frozenset({"kate"})) == dict.fromkeys(words, 0.0)


def test_an_empty_pool_or_no_seed_score_gives_nothing() -> None:
    assert hop_scores({}, {}) == {}
    words = {"a": frozenset({"x"}), "b": frozenset({"x"})}
    assert hop_scores(words, {"a": 0.0, "b": 0.0}) == {"a": 0.0, "b": 0.0}


def test_it_works_on_terms_of_any_script() -> None:
    texts = {
        "hit": "我们去玄天宗拜访。",
        "next": "玄天宗的长老很友善。",
        "other": "今天下雨了。",
        "other2": "下雨天在家。",
    }
    words = {k: word_set(t) for k, t in texts.items()}
    hop = hop_scores(words, {"hit": 1.0, "next": 0.1, "other": 0.5, "other2": 0.4}, seeds=1)
    assert hop["next"] > hop["other"]


@given(
    st.dictionaries(
        st.sampled_from("abcdefgh"),
        st.tuples(st.frozensets(st.sampled_from("pqrstuvw"), max_size=4), st.floats(0, 1)),
        max_size=8,
    )
)
def test_scores_are_in_unit_range_and_cover_every_turn(pool: dict[str, tuple[frozenset[str], float]]) -> None:
    words = {k: w for k, (w, _) in pool.items()}
    hop = hop_scores(words, {k: s for k, (_, s) in pool.items()})
    assert hop.keys() == words.keys()
    assert all(0.0 <= v <= 1.0 for v in hop.values())


def test_the_ranking_lever_lifts_the_second_hop_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two hits name the trip; the turn about what followed shares their "Miami", "beach" and "sunburn", not the
    # question's words, and the fusion ranked it last.
    texts = [
        ("q1", "Kate went on a trip to Miami last May"),
        ("q2", "Miami beach was crowded, Kate got a sunburn"),
        ("f1", "Emi likes trips with her dog"),
        ("f2", "A trip to the dentist is never fun"),
        ("f3", "The weather was nice for a trip"),
        ("ans", "Her sunburn from the beach in Miami lasted a week"),
    ]
    cands = [Candidate(k, r, author="Kate", text=t) for r, (k, t) in enumerate(texts, start=1)]
    query = "Where did Kate go on her trip?"
    without = [k for k, _ in rank_candidates(query, cands, 6, now=0.0, levers=RankLevers(hop_weight=0.0))]
    with_hop = [k for k, _ in rank_candidates(query, cands, 6, now=0.0, levers=RankLevers(hop_weight=1.0))]
    assert without.index("ans") == 5
    assert with_hop.index("ans") < without.index("ans")
    # The module default (ranking.HOP_WEIGHT, what the offline ablation sets) is read at call time.
    monkeypatch.setattr(ranking, "HOP_WEIGHT", 1.0)
    assert [k for k, _ in rank_candidates(query, cands, 6, now=0.0)] == with_hop


@pytest.mark.parametrize("weight", [0.4, 1.0])
def test_the_hop_never_lowers_the_only_turn_holding_the_questions_rare_word(weight: float) -> None:
    # tests/integration/test_context_assembler.py::test_a_word_match_is_retrieved_below_min_score in the pure
    # ranking: the fusion ranked first the one turn holding "oilcloth"; the rest share only common words with
    # each other, so the walk from the first hits lifts them all. Dividing every score by 1 + weight sank the
    # lone match (no shared word, no hop) below six of them; a lift towards 1 keeps it first.
    texts = [("m2", "I wrapped the silver key in oilcloth and put it in my boot.")] + [
        (f"m{i}", f"We talk about rope and knots, part {i}.") for i in range(4, 16)
    ]
    cands = [Candidate(k, r, position=int(k[1:]), text=t) for r, (k, t) in enumerate(texts, start=1)]
    ranked = rank_candidates("What about the oilcloth?", cands, 6, now=0.0, levers=RankLevers(hop_weight=weight))
    assert ranked[0][0] == "m2"


@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 4))
def test_a_hopped_score_stays_in_unit_range_and_never_falls(base: float, hop: float, weight: float) -> None:
    assert base <= ranking.hopped(base, hop, weight) <= 1.0
