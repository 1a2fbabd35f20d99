"""A session lift for the ranking (issue 30), built and **off**: measured within noise on the REALTALK dev set.

Multi-hop evidence that the first 10 miss but the pool holds sits in the session of a first-10 hit 65 % of the
time (a failure analysis of the misses), so a candidate written within ``SESSION_HOURS`` of the first
``SESSION_SEEDS`` candidates gains ``SESSION_WEIGHT`` of their summed base scores (scaled to [0, 1] by the
largest sum), only when that raises its score, as the second hop does. Whole set offline at the pool of 120
(``python -m bench.retrieval_ablation --pool 120 --rows "session lift"``): R@10 0.627 -> 0.628 / 0.625 / 0.629 at
0.2 / 0.4 / 0.8, within 2,000 tokens 0.775 -> 0.772-0.774 (docs/benchmarks.md, Retrieval levers): a session
holds dozens of turns on other topics, so time alone does not tell which of them answers.
"""

from __future__ import annotations

from collections.abc import Mapping

#: The lift's weight against a candidate's base score (0: off).
SESSION_WEIGHT = 0.0
SESSION_HOURS = 3.0
SESSION_SEEDS = 10


def session_scores(base: Mapping[str, float], created: Mapping[str, float | None]) -> dict[str, float]:
    """Each key's summed base score of the first ``SESSION_SEEDS`` candidates written within ``SESSION_HOURS``
    of it (itself included), scaled to [0, 1] by the largest sum; 0 where the time is unknown."""
    seeds = sorted(base, key=lambda k: -base[k])[:SESSION_SEEDS]
    span = SESSION_HOURS * 3600.0
    sums: dict[str, float] = {}
    for k, t in created.items():
        near = (base[j] for j in seeds if (u := created.get(j)) is not None and t is not None and abs(u - t) <= span)
        sums[k] = sum(near)
    top = max(sums.values(), default=0.0)
    return {k: v / top if top > 0 else 0.0 for k, v in sums.items()}


def session_lifted(base: Mapping[str, float], created: Mapping[str, float | None]) -> dict[str, float]:
    """``base`` after the lift: ``(b + w s) / (1 + w)`` when that is higher than ``b`` (never lower), ``w``
    :data:`SESSION_WEIGHT` (> 0: the ranking calls it only when the lift is on), ``s`` :func:`session_scores`."""
    lift = session_scores(base, created)
    return {k: max(b, (b + SESSION_WEIGHT * lift[k]) / (1 + SESSION_WEIGHT)) for k, b in base.items()}
