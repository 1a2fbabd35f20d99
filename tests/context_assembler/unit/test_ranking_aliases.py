"""Names a conversation calls its participants by (search/aliases.py), and a question about several people
ranked once per person (ranking.rank_candidates' ``split_named``)."""

from __future__ import annotations

import pytest

import mnemo.services.context_assembler.search.ranking as ranking
from mnemo.services.context_assembler.search.aliases import aliases, named_by_alias
from mnemo.services.context_assembler.search.levers import RankLevers
from mnemo.services.context_assembler.search.ranking import Candidate, named_participants, rank_candidates

CHAT = [
    ("Emi", "Haha, totally forgot to introduce myself, I'm Kate. What's your name?"),
    ("Elise", "Hey Kate! How was the cooking class?"),
    ("Elise", "Thank you Kate, I really appreciate it!"),
    ("Emi", "It was great, we made pasta with my friend John."),
    ("Elise", "Did John like it?"),
]


def test_a_name_used_to_address_one_author_is_theirs() -> None:
    assert aliases(CHAT) == {"kate": "Emi"}
    assert aliases(CHAT[1:4]) == {"kate": "Emi"}  # addressed twice, no introduction needed


def test_a_third_person_talked_about_is_no_alias() -> None:
    # John is named by both authors, and never addressed: not an alias of either.
    assert "john" not in aliases(CHAT)
    # Addressed once only: not enough.
    assert aliases([("Emi", "hi"), ("Elise", "Thanks, Kate!")]) == {}


def test_a_name_the_author_writes_themselves_is_no_alias() -> None:
    lines = [*CHAT[1:4], ("Emi", "Kate said the sauce was too salty")]
    assert aliases(lines) == {}


def test_nothing_is_inferred_in_a_group() -> None:
    assert aliases([*CHAT, ("Paola", "Hey Kate!")]) == {}
    assert aliases([("Emi", "Hey Kate!"), ("Emi", "Thanks Kate!")]) == {}  # one author: no addressee


def test_an_author_s_own_name_is_not_an_alias_of_the_other() -> None:
    assert aliases([("Emi", "Hey Elise!"), ("Emi", "Thanks Elise!"), ("Elise", "hi")]) == {}


def test_the_query_names_the_author_by_alias() -> None:
    assert named_by_alias("What does Kate cook?", {"kate": "Emi"}) == ["Emi"]
    assert named_participants("What do Kate and Elise like?", ["Elise", "Emi"], {"kate": "Emi"}) == ["Elise", "Emi"]
    assert named_participants("What does Kate cook?", ["Elise", "Emi"]) == []


def _candidates(lines: list[tuple[str, str]]) -> list[Candidate]:
    return [Candidate(f"m{i}", i + 1, 10 * i, None, a, t) for i, (a, t) in enumerate(lines)]


def test_an_alias_boosts_the_author_asked_about() -> None:
    lines = [
        *CHAT[1:3],
        ("Elise", "I cooked rice yesterday"),
        ("Emi", "I cooked a lasagna for my family"),
    ]
    pool = _candidates(lines)
    with_alias = [
        k for k, _ in rank_candidates("What did Kate cook?", pool, 4, now=0.0, levers=RankLevers(use_aliases=True))
    ]
    without = [
        k for k, _ in rank_candidates("What did Kate cook?", pool, 4, now=0.0, levers=RankLevers(use_aliases=False))
    ]
    assert with_alias[0] == "m3"
    assert without[0] != "m3"  # the fused order: a greeting that names Kate first


def test_a_question_about_two_people_sees_the_best_of_each() -> None:
    lines = [("Elise", f"Elise likes green tea number {i}") for i in range(6)]
    lines.append(("Emi", "Emi likes black tea"))
    pool = _candidates(lines)
    split = rank_candidates("What teas do Elise and Emi like?", pool, 3, now=0.0, levers=RankLevers(split_named=True))
    plain = rank_candidates("What teas do Elise and Emi like?", pool, 3, now=0.0, levers=RankLevers(split_named=False))
    assert "m6" in [k for k, _ in split]
    assert "m6" not in [k for k, _ in plain]
    scores = [s for _, s in split]
    assert scores == sorted(scores, reverse=True)  # the relevance follows the order


def test_rank_k_is_read_when_ranking(monkeypatch: pytest.MonkeyPatch) -> None:
    # The offline ablation sets ranking.RANK_K; bound as a default argument it used to change nothing.
    pool = [Candidate(f"m{i}", i + 1, 100 * i, None, "", f"distinct words number {i}") for i in range(3)]

    def third() -> float:
        # hop_weight 0: the pool's shared words would move the base scores.
        return dict(rank_candidates("tea", pool, 3, now=0.0, levers=RankLevers(hop_weight=0.0)))["m2"]

    monkeypatch.setattr(ranking, "RANK_K", 20)
    smooth = third()
    monkeypatch.setattr(ranking, "RANK_K", 2)
    assert third() < smooth
    assert third() == pytest.approx(ranking.rank_base(3, 2), abs=0.05)
