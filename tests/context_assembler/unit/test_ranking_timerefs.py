"""The time a query refers to (mnemo/services/context_assembler/search/timerefs.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.services.context_assembler.search.timerefs import TimeWindow, referred_window

NOW = datetime(2024, 1, 20, 12, tzinfo=UTC).timestamp()  # a Saturday


def ts(y: int, m: int, d: int, h: int = 0) -> float:
    return datetime(y, m, d, h, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    "text",
    [
        "What kind of pasta did Kate make on 29 Dec 2023?",
        "What happened on the 29th of December, 2023?",
        "What game did he watch on December 29 2023?",
        "and on Dec. 29th, 2023?",
    ],
)
def test_a_written_date_is_that_day(text: str) -> None:
    assert referred_window(text, NOW) == TimeWindow(ts(2023, 12, 29), ts(2023, 12, 30))


def test_before_and_after_open_the_window() -> None:
    before = referred_window("Did she take the test before December 23rd, 2023?", NOW)
    assert before == TimeWindow(end=ts(2023, 12, 23))
    after = referred_window("What changed after 5 January 2024?", NOW)
    assert after == TimeWindow(start=ts(2024, 1, 6))


def test_months() -> None:
    assert referred_window("a hike in January 2024", NOW) == TimeWindow(ts(2024, 1, 1), ts(2024, 2, 1))
    assert referred_window("in December 2023", NOW) == TimeWindow(ts(2023, 12, 1), ts(2024, 1, 1))
    may = referred_window("What did we do in May?", NOW)
    assert may == TimeWindow(month=5)
    assert may is not None
    assert may.contains(ts(2019, 5, 3))
    assert not may.contains(ts(2019, 6, 3))
    assert referred_window("I may go there", NOW) is None


def test_a_date_without_a_year_matches_that_day_of_any_year() -> None:
    w = referred_window("What did you do on January 6?", NOW)
    assert w == TimeWindow(month=1, day=6)
    assert w is not None
    assert w.contains(ts(2021, 1, 6, 23))
    assert not w.contains(ts(2021, 1, 7))


def test_relative_expressions_are_anchored_at_now() -> None:
    assert referred_window("what did you do yesterday?", NOW) == TimeWindow(ts(2024, 1, 19), ts(2024, 1, 20))
    assert referred_window("today", NOW) == TimeWindow(ts(2024, 1, 20), ts(2024, 1, 21))
    assert referred_window("3 days ago", NOW) == TimeWindow(ts(2024, 1, 17), ts(2024, 1, 18))
    assert referred_window("last week", NOW) == TimeWindow(ts(2024, 1, 8), ts(2024, 1, 15))
    assert referred_window("last month", NOW) == TimeWindow(ts(2023, 12, 1), ts(2024, 1, 1))


def test_no_time_no_window() -> None:
    assert referred_window("What are Kate's hobbies?", NOW) is None
    assert referred_window("on 31 Feb 2024", NOW) is None  # no such day: no preference, no error


@given(st.text(max_size=80))
def test_never_raises(text: str) -> None:
    w = referred_window(text, NOW)
    assert w is None or isinstance(w, TimeWindow)


def test_a_dated_message_narrows_the_search_to_its_window() -> None:
    from mnemo.services.context_assembler.search.filters import dated_filter
    from mnemo.shared.vectors.port import Range, VectorFilter

    base = VectorFilter.where(tenant_id="t", kind="message")
    flt = dated_filter(base, "What did Elise buy on 7 Jan 2024?", NOW)
    assert flt is not None
    assert flt.must[:-1] == base.must
    assert flt.must[-1] == Range("created_at", gte=ts(2024, 1, 7), lte=ts(2024, 1, 8) - 0.001)
    assert dated_filter(base, "before 4 January 2024", NOW) == base.and_(
        Range("created_at", lte=ts(2024, 1, 4) - 0.001)
    )
    # No year, no range (ranking boosts that month instead); no date, no filter.
    assert dated_filter(base, "What did we do in May?", NOW) is None
    assert dated_filter(base, "What are Kate's hobbies?", NOW) is None
