"""Time in questions and turns (search/when.py): questions that ask when, turns that say when or tell of the
time a question names, and expressions resolved by dateparser."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.services.context_assembler.search.levers import RankLevers
from mnemo.services.context_assembler.search.ranking import Candidate, rank_candidates
from mnemo.services.context_assembler.search.timerefs import TimeWindow
from mnemo.services.context_assembler.search.when import (
    asks_when,
    dated_window,
    matches,
    parsed_window,
    states_time,
)

WRITTEN = datetime(2024, 1, 10, 15, tzinfo=UTC).timestamp()  # a Wednesday


def day(y: int, m: int, d: int) -> TimeWindow:
    start = datetime(y, m, d, tzinfo=UTC).timestamp()
    return TimeWindow(start, start + 86400)


@pytest.mark.parametrize(
    "query",
    [
        "When did Fahim catch a cold?",
        "what date was the concert",
        "Kate 什么时候去的公园？",
        "Когда ты был в Париже?",
        "いつ映画を見たの？",
        "언제 갔어?",
        "Wann warst du dort?",
    ],
)
def test_questions_that_ask_when(query: str) -> None:
    assert asks_when(query)


@pytest.mark.parametrize("query", ["What does Kate cook?", "Where did Fahim go?", "Что ты ел?", "你喜欢什么？"])
def test_questions_that_do_not(query: str) -> None:
    assert not asks_when(query)


@pytest.mark.parametrize(
    "text",
    [
        "I caught a cold yesterday",
        "Two weeks ago I started reading",
        "last Saturday we went hiking",
        "Вчера я ходил в парк",
        "昨天我去了公园",
        "先週の土曜日に映画を見た",
        "어제 공원에 갔어",
        "back in March 2023",
    ],
)
def test_turns_that_say_when(text: str) -> None:
    assert states_time(text)


@pytest.mark.parametrize("text", ["I love pasta", "Did John like it?", "我喜欢茶", "Я люблю чай", "may I ask"])
def test_turns_that_do_not(text: str) -> None:
    assert not states_time(text)


def test_a_turn_s_own_date_is_resolved_against_the_day_it_was_written() -> None:
    assert dated_window("I caught a cold yesterday", WRITTEN) == day(2024, 1, 9)
    assert dated_window("I love pasta", WRITTEN) is None
    assert matches(day(2024, 1, 9), dated_window("I caught a cold yesterday", WRITTEN))
    assert not matches(day(2024, 1, 8), dated_window("I caught a cold yesterday", WRITTEN))
    assert not matches(day(2024, 1, 9), TimeWindow(month=1))  # no year: says too little


def test_dateparser_resolves_what_the_patterns_do_not() -> None:
    assert dated_window("We went hiking last Saturday", WRITTEN) is None  # not one of timerefs' patterns
    assert parsed_window("We went hiking last Saturday", WRITTEN) == day(2024, 1, 6)
    assert parsed_window("Вчера я ходил в парк", WRITTEN) == day(2024, 1, 9)
    may = parsed_window("What did she bake in May?", WRITTEN)
    assert may == TimeWindow(datetime(2023, 5, 1, tzinfo=UTC).timestamp(), datetime(2023, 6, 1, tzinfo=UTC).timestamp())
    assert parsed_window("I love pasta right now", WRITTEN) is None  # "now" is no time a question names


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=60))
def test_any_text_parses_to_a_window_or_none(text: str) -> None:
    window = parsed_window(text, WRITTEN) if states_time(text) else None
    assert window is None or isinstance(window, TimeWindow)


def _pool(lines: list[tuple[str, float]]) -> list[Candidate]:
    return [Candidate(f"m{i}", i + 1, 10 * i, at, "Emi", text) for i, (text, at) in enumerate(lines)]


def test_asking_when_lifts_the_turn_that_says_when() -> None:
    pool = _pool([("I started reading Pachinko, a great book", WRITTEN), ("I started Pachinko yesterday!", WRITTEN)])
    query = "When did Emi start reading Pachinko?"
    lifted = [k for k, _ in rank_candidates(query, pool, 2, now=WRITTEN, levers=RankLevers(when_boost=0.3))]
    plain = [k for k, _ in rank_candidates(query, pool, 2, now=WRITTEN, levers=RankLevers(when_boost=0.0))]
    assert lifted[0] == "m1"
    assert plain[0] == "m0"
    # a question that does not ask when is not changed by the lever
    other = "What is Emi reading?"
    ranked = {
        boost: rank_candidates(other, pool, 2, now=WRITTEN, levers=RankLevers(when_boost=boost)) for boost in (0.3, 0.0)
    }
    assert ranked[0.3] == ranked[0.0]


def test_a_turn_telling_of_the_named_day_counts_as_in_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import mnemo.services.context_assembler.search.ranking as ranking

    later = datetime(2024, 1, 10, 9, tzinfo=UTC).timestamp()
    pool = _pool([("We had pasta with the kids", later), ("I had a cold yesterday, pasta helped", later)])
    query = "What did Emi eat on 9 January 2024?"
    monkeypatch.setattr(ranking, "TURN_DATES", True)
    assert next(k for k, _ in rank_candidates(query, pool, 2, now=later)) == "m1"
    monkeypatch.setattr(ranking, "TURN_DATES", False)
    assert next(k for k, _ in rank_candidates(query, pool, 2, now=later)) == "m0"


def test_parsed_question_dates(monkeypatch: pytest.MonkeyPatch) -> None:
    saturday = datetime(2024, 1, 6, 18, tzinfo=UTC).timestamp()
    pool = _pool([("We went to the lake and swam", WRITTEN), ("We went to the lake, it was cold", saturday)])
    query = "Where did Emi go last Saturday?"
    with_parse = [k for k, _ in rank_candidates(query, pool, 2, now=WRITTEN, levers=RankLevers(parse_dates=True))]
    without = [k for k, _ in rank_candidates(query, pool, 2, now=WRITTEN, levers=RankLevers(parse_dates=False))]
    assert with_parse[0] == "m1"
    assert without[0] == "m0"
