"""Pure ranking of recalled memories: relevance from its parts, the recency lever, near-duplicates out.

One memory's score is ``relevance * recency`` (:func:`score`): relevance is a weighted sum of the dense cosine
(the query's meaning) and the lexical share (:func:`lexical_share`, the query's words it holds), each in
[0, 1]; recency (:func:`recency_factor`) is ``floor + (1 - floor) * 0.5 ** (age / half_life)``: a memory as old
as the half-life keeps the middle of the range, and no memory ever falls below ``floor`` of its relevance, so
recency orders memories of like relevance instead of burying an old exact answer. A half-life of 0 turns it
off. The same factor ranks the remembered memories of a context (``remembered.py``), so search and context
agree.

Near-duplicates (:func:`without_near_duplicates`): a result whose words are nearly those of a better one
(Jaccard of the word sets at or above :data:`DUPLICATE_JACCARD`) is left out: the same fact remembered
through the API and extracted from the chat is one result, the better scored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from mnemo.shared.sparse import query_weight, tokens

DENSE_WEIGHT = 0.7
LEXICAL_WEIGHT = 0.3
RECENCY_FLOOR = 0.5
DUPLICATE_JACCARD = 0.85
DAY_S = 86_400.0
T = TypeVar("T")


@dataclass(frozen=True)
class Parts:
    dense: float
    lexical: float
    recency: float


def recency_factor(age_s: float, half_life_days: float, floor: float = RECENCY_FLOOR) -> float:
    """In [floor, 1]: 1 for a memory of now (or of the future), halfway down for one a half-life old; 1 for
    every memory when ``half_life_days`` is 0 (recency off)."""
    if half_life_days <= 0:
        return 1.0
    decay = float(0.5 ** (max(0.0, age_s) / (half_life_days * DAY_S)))
    return floor + (1.0 - floor) * decay


def with_recency(
    scores: Mapping[str, float], created_at: Mapping[str, float], now: float, half_life_days: float, floor: float
) -> dict[str, float]:
    """``scores`` (id -> relevance) times each id's :func:`recency_factor` (its ``created_at``, epoch seconds;
    unknown: 1), best first; unchanged, in its own order, when recency is off (``half_life_days`` 0)."""
    if half_life_days <= 0:
        return dict(scores)
    aged = {k: v * recency_factor(now - created_at.get(k, now), half_life_days, floor) for k, v in scores.items()}
    return dict(sorted(aged.items(), key=lambda kv: -kv[1]))


def lexical_share(query: str, text: str) -> float:
    """The share of the query's terms (weighted as the lexical search weighs them) that ``text`` holds."""
    wanted = {t: query_weight(t) for t in tokens(query)}
    total = sum(wanted.values())
    if total <= 0:
        return 0.0
    have = set(tokens(text))
    return sum(w for t, w in wanted.items() if t in have) / total


def relevance(dense: float, lexical: float, has_words: bool) -> float:
    """The weighted sum (dense alone when the query has no words, e.g. only emoji), in [0, 1]."""
    dense = min(1.0, max(0.0, dense))
    if not has_words:
        return dense
    return DENSE_WEIGHT * dense + LEXICAL_WEIGHT * min(1.0, max(0.0, lexical))


def score(parts: Parts, has_words: bool) -> float:
    return relevance(parts.dense, parts.lexical, has_words) * parts.recency


def word_set(text: str) -> frozenset[str]:
    return frozenset(tokens(text))


def without_near_duplicates(ranked: Sequence[T], text_of: Callable[[T], str], limit: int) -> list[T]:
    """The first ``limit`` of ``ranked`` (best first) that are not near-duplicates of one kept before them."""
    kept: list[T] = []
    words: list[frozenset[str]] = []
    for item in ranked:
        mine = word_set(text_of(item))
        if any(_jaccard(mine, other) >= DUPLICATE_JACCARD for other in words):
            continue
        kept.append(item)
        words.append(mine)
        if len(kept) == limit:
            break
    return kept


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)
