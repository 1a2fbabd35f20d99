"""The session lift of the ranking (``sessions.SESSION_WEIGHT``, off by default: measured within noise, issue 30):
a candidate written near the first hits gains their summed scores, and never loses anything."""

from __future__ import annotations

import pytest

import mnemo.services.context_assembler.search.sessions as sessions
from mnemo.services.context_assembler.search.ranking import Candidate, rank_candidates
from mnemo.services.context_assembler.search.sessions import session_scores

HOUR = 3600.0


def test_a_candidate_near_the_first_hits_scores_their_sum_and_one_far_away_nothing() -> None:
    base = {"hit": 1.0, "hit2": 0.8, "near": 0.2, "far": 0.3, "unknown": 0.25}
    created = {"hit": 0.0, "hit2": 1 * HOUR, "near": 2 * HOUR, "far": 30 * HOUR, "unknown": None}
    scores = session_scores(base, created)
    assert scores["unknown"] == 0.0
    assert scores["near"] == scores["hit"] == scores["hit2"] == 1.0  # all three see both hits (3 hours)
    assert scores["far"] == pytest.approx(0.3 / 2.0)  # only itself, against the sum 1.0 + 0.8 + 0.2


def test_the_lift_raises_a_turn_of_the_first_hits_session_and_is_off_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert sessions.SESSION_WEIGHT == 0.0
    day = 86400.0
    pool = [Candidate("hit", 1, 0, 0.0, "A", "trip to miami")]
    pool += [Candidate(f"other{i}", i + 2, 100 + i, (i + 2) * day, "B", f"cats {i}") for i in range(8)]
    pool.append(Candidate("same-session", 10, 50, 600.0, "A", "the beach was great"))
    without = [k for k, _ in rank_candidates("trip?", pool, 10, now=0.0)]
    monkeypatch.setattr(sessions, "SESSION_WEIGHT", 0.8)
    lifted = rank_candidates("trip?", pool, 10, now=0.0)
    order = [k for k, _ in lifted]
    assert order[0] == "hit"  # the first of the fused list stays first: the lift never lowers
    assert order.index("same-session") < without.index("same-session")
