"""Re-ranking of retrieved messages (mnemo/services/context_assembler/search/ranking.py): each lever on its own."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

import mnemo.services.context_assembler.search.ranking as ranking
from mnemo.services.context_assembler.search.levers import RankLevers
from mnemo.services.context_assembler.search.ranking import (
    NEIGHBOUR_WEIGHT,
    Candidate,
    jaccard,
    mmr,
    named_participant,
    near_duplicate,
    neighbour_scores,
    rank_base,
    rank_candidates,
    word_set,
)

NOW = datetime(2024, 1, 20, 12, tzinfo=UTC).timestamp()


def day(d: int, month: int = 1) -> float:
    return datetime(2024, month, d, 15, tzinfo=UTC).timestamp()


def test_rank_base_is_one_for_the_first_and_decreases() -> None:
    assert rank_base(1) == 1.0
    assert 1.0 > rank_base(2) > rank_base(20) > rank_base(60) > 0


def test_neighbours_lend_their_best_score() -> None:
    base = {"a": 1.0, "b": 0.2, "c": 0.5, "far": 0.9}
    near = neighbour_scores(base, {"a": 10, "b": 11, "c": 12, "far": 40}, width=1)
    assert near == {"a": 0.2, "b": 1.0, "c": 0.2, "far": 0.0}
    # Further away counts less: "c" is 2 from "a" (1.0 * decay) and 1 from "b" (0.2).
    near = neighbour_scores(base, {"a": 10, "b": 11, "c": 12, "far": 40}, width=3, decay=0.5)
    assert near == {"a": 0.25, "b": 1.0, "c": 0.5, "far": 0.0}
    assert neighbour_scores({"x": 1.0}, {"x": None}) == {"x": 0.0}


def test_fused_order_decides_when_nothing_else_differs() -> None:
    cands = [Candidate(k, r) for r, k in enumerate(["m3", "m1", "m2"], start=1)]
    ranked = rank_candidates("anything", cands, 2, now=NOW)
    assert [k for k, _ in ranked] == ["m3", "m1"]
    assert 1.0 >= ranked[0][1] > ranked[1][1] > 0


def test_a_neighbour_of_a_strong_candidate_moves_up() -> None:
    cands = [
        Candidate("question", 1, position=100),
        Candidate("unrelated", 2, position=5),
        Candidate("answer", 3, position=101),
    ]
    ranked = [k for k, _ in rank_candidates("", cands, 3, now=NOW)]
    assert ranked.index("answer") < ranked.index("unrelated")
    assert NEIGHBOUR_WEIGHT > 0


def test_the_one_named_participant_is_preferred() -> None:
    assert named_participant("What are Kate's hobbies?", ["Kate Smith", "Elise"]) == "Kate Smith"
    assert named_participant("Did Kate and Elise meet?", ["Kate", "Elise"]) is None
    assert named_participant("what are your hobbies?", ["Kate", "Elise"]) is None
    assert named_participant("Is Al here?", ["Al", "Bo"]) is None  # too short to be trusted as a name
    cands = [
        Candidate("elise-1", 1, author="Elise", text="I love skiing in winter"),
        Candidate("kate-1", 2, author="Kate", text="Cooking class today!"),
    ]
    ranked = rank_candidates("What are Kate's hobbies?", cands, 2, now=NOW)
    assert [k for k, _ in ranked] == ["kate-1", "elise-1"]


def test_messages_in_the_referred_time_are_preferred() -> None:
    cands = [
        Candidate("dec", 1, created_at=datetime(2023, 12, 28, tzinfo=UTC).timestamp(), text="We made soup"),
        Candidate("jan7", 2, created_at=day(7), text="I bought a new lamp"),
    ]
    ranked = rank_candidates("What did Elise buy on 7 Jan 2024?", cands, 2, now=NOW)
    assert [k for k, _ in ranked] == ["jan7", "dec"]
    # Relative to now: "yesterday" is 19 Jan 2024.
    cands = [Candidate("old", 1, created_at=day(2)), Candidate("yday", 2, created_at=day(19))]
    assert rank_candidates("what happened yesterday?", cands, 1, now=NOW)[0][0] == "yday"


def test_near_duplicates_are_dropped_and_distinct_texts_kept() -> None:
    cands = [
        Candidate("a", 1, text="Happy new year to you and your family!"),
        Candidate("b", 2, text="happy New Year to you and your family"),
        Candidate("c", 3, text="Where did you celebrate?"),
    ]
    assert [k for k, _ in rank_candidates("new year", cands, 3, now=NOW)] == ["a", "c"]
    assert near_duplicate(word_set("the cats sat"), [word_set("cat sat")])
    assert not near_duplicate(word_set("cats sat on mats"), [word_set("dogs ran")])


def test_mmr_trades_relevance_for_diversity_only_below_lambda_one() -> None:
    rel = {"a": 1.0, "a2": 0.95, "b": 0.9}
    sim = {frozenset({"a", "a2"}): 0.9}

    def similarity(x: str, y: str) -> float:
        return sim.get(frozenset({x, y}), 0.0)

    assert mmr(rel, similarity, 2, lam=1.0) == ["a", "a2"]
    assert mmr(rel, similarity, 2, lam=0.5) == ["a", "b"]


def test_a_reranker_score_replaces_the_fused_rank() -> None:
    cands = [Candidate("a", 1), Candidate("b", 2)]
    ranked = rank_candidates("q", cands, 2, now=NOW, rerank={"a": 0.1, "b": 0.9})
    assert [k for k, _ in ranked] == ["b", "a"]


def test_nothing_asked_nothing_given() -> None:
    assert rank_candidates("q", [], 5, now=NOW) == []
    assert rank_candidates("q", [Candidate("a", 1)], 0, now=NOW) == []


def test_duplicate_keys_keep_their_best_rank() -> None:
    ranked = rank_candidates("q", [Candidate("a", 5), Candidate("b", 2), Candidate("a", 9)], 5, now=NOW)
    assert [k for k, _ in ranked] == ["b", "a"]


@given(
    st.lists(
        st.tuples(
            st.integers(1, 80),
            st.one_of(st.none(), st.integers(0, 50)),
            st.sampled_from(["Kate", "Elise", ""]),
            st.text(max_size=30),
        ),
        max_size=30,
    ),
    st.text(max_size=40),
    st.integers(0, 25),
)
def test_relevance_is_bounded_and_sorted(rows: list[tuple[int, int | None, str, str]], query: str, limit: int) -> None:
    cands = [Candidate(f"m{i}", r, pos, day(1 + i % 28), author, text) for i, (r, pos, author, text) in enumerate(rows)]
    ranked = rank_candidates(query, cands, limit, now=NOW)
    scores = [s for _, s in ranked]
    assert len(ranked) <= limit
    assert len({k for k, _ in ranked}) == len(ranked)
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)


def test_jaccard_of_empty_sets_is_one() -> None:
    assert jaccard(frozenset(), frozenset()) == 1.0
    assert jaccard(frozenset({"a"}), frozenset({"b"})) == 0.0


def test_a_question_gives_way_to_a_statement_just_below_it() -> None:
    # hop_weight 0: the second hop (test_ranking_hops.py) would lift "far" for the "skiing" it shares with
    # "tell"; this is about the question weight alone.
    cands = [
        Candidate("ask", 1, text="What about you, Kate, any hobbies?"),
        Candidate("tell", 2, text="I love skiing and cooking classes."),
        Candidate("far", 9, text="Skiing again next week."),
    ]
    ranked = [
        k for k, _ in rank_candidates("What are Kate's hobbies?", cands, 3, now=NOW, levers=RankLevers(hop_weight=0.0))
    ]
    assert ranked == ["tell", "ask", "far"]  # a weaker question still beats a much weaker statement
    zh = [Candidate("ask", 1, text="你喜欢什么？"), Candidate("tell", 2, text="我喜欢滑雪。")]
    assert [k for k, _ in rank_candidates("爱好", zh, 2, now=NOW)] == ["tell", "ask"]


def test_a_deeper_pool_flattens_the_rank_prior(monkeypatch: pytest.MonkeyPatch) -> None:
    deep = [Candidate(f"m{r}", r) for r in range(1, 121)]
    shallow = deep[:30]
    scaled = dict(rank_candidates("anything", deep, 120, now=NOW, levers=RankLevers(hop_weight=0.0)))
    monkeypatch.setattr(ranking, "RANK_K_PER_CANDIDATE", 0.0)
    fixed = dict(rank_candidates("anything", deep, 120, now=NOW, levers=RankLevers(hop_weight=0.0)))
    monkeypatch.undo()
    assert fixed["m60"] == pytest.approx(rank_base(60, 20))
    assert scaled["m60"] == pytest.approx(rank_base(60, 40)), "K a third of the 120 candidates"
    assert scaled["m1"] == 1.0
    assert list(scaled) == list(fixed), "the order is the fused order still"
    assert dict(rank_candidates("anything", shallow, 30, now=NOW, levers=RankLevers(hop_weight=0.0)))[
        "m20"
    ] == pytest.approx(rank_base(20, 20)), "never flatter than RANK_K: a shallow pool keeps it"


def test_a_neighbour_lifts_a_turn_sharing_the_questions_words_more(monkeypatch: pytest.MonkeyPatch) -> None:
    cands = [
        Candidate("match", 1, position=10, text="Kate went skiing in the Alps last winter."),
        Candidate("bare", 5, position=9, text="Guess what happened!"),
        Candidate("shares", 6, position=11, text="The skiing was freezing though."),
    ]

    def order() -> list[str]:
        return [
            k
            for k, _ in rank_candidates(
                "Where did Kate go skiing?", cands, 3, now=NOW, levers=RankLevers(hop_weight=0.0)
            )
        ]

    assert order() == ["match", "bare", "shares"], "every neighbour lifted alike: the fused order between them"
    monkeypatch.setattr(ranking, "NEIGHBOUR_OWN", 1.0)
    assert order() == ["match", "shares", "bare"]
    monkeypatch.setattr(ranking, "NEIGHBOUR_OWN_BY", "score")
    assert order() == ["match", "bare", "shares"], "by its own score the better-ranked neighbour stays first"
