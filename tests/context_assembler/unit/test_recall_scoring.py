"""The recency lever shared by the memory search and the context (``recall/scoring.py``)."""

from __future__ import annotations

import pytest

from mnemo.services.context_assembler.recall.scoring import DAY_S, recency_factor, with_recency

NOW = 1_800_000_000.0


def test_the_factor_halves_the_boost_at_the_half_life_and_never_falls_below_the_floor() -> None:
    assert recency_factor(0, 30) == 1.0
    assert recency_factor(30 * DAY_S, 30) == pytest.approx(0.75)
    assert recency_factor(10_000 * DAY_S, 30) == pytest.approx(0.5)
    assert recency_factor(-5 * DAY_S, 30) == 1.0  # a memory dated in the future is as new as now
    assert recency_factor(10_000 * DAY_S, 0) == 1.0  # off


def test_with_recency_reorders_by_aged_score_and_off_changes_nothing() -> None:
    scores = {"old": 0.9, "new": 0.8, "undated": 0.7}  # fusion order, not score order
    created = {"old": NOW - 365 * DAY_S, "new": NOW}
    aged = with_recency(scores, created, NOW, 30, 0.5)
    assert list(aged) == ["new", "undated", "old"]
    assert aged["new"] == pytest.approx(0.8)
    assert aged["undated"] == pytest.approx(0.7)
    assert aged["old"] == pytest.approx(0.9 * recency_factor(365 * DAY_S, 30))
    off = with_recency({"b": 0.5, "a": 0.9}, created, NOW, 0, 0.5)
    assert list(off.items()) == [("b", 0.5), ("a", 0.9)]
