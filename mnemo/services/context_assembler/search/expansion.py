"""The second search of retrieved messages (multi-hop expansion, RM3-style pseudo-relevance feedback).

A question whose answer is spread over several turns ("what did Kate do after her trip?") often finds one of
them and misses the others, which share words with the found turn rather than with the question. So the
words that at least ``MIN_SHARED`` of the first ``FROM_HITS`` hits share and the query lacks (up to
``TERMS``, most shared first) are added to the lexical query at ``weight`` of a query word's, and the
messages are searched once more with it (same dense vector, same filter: one more hybrid query and one read
of the new ids, serial after the first). That search's pool replaces the first one's; the ranking
(``ranking.py``) then sees it as it saw the first.

Why this form (RM3's interpolated query) and not a lexical search of the new words alone fused with the first
lists: the engine's hybrid query fuses its own two prefetches, and a lexical-only search would need a new
method on every vector index adapter; the offline ablation (``bench/retrieval_ablation.py``, rows "second
search") measured both (docs/benchmarks.md, Retrieval levers), the interpolated query is the one served.

Off (``weight`` 0) or with nothing to add, the first pool is kept as is; a failed or late second search keeps
it too (logged): the reply never waits on it past ``retrieval_timeout_s``.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from mnemo.shared.sparse import query_weight, term_id, tokens
from mnemo.shared.vectors.port import ScoredPoint, SparseVector

__all__ = ["FROM_HITS", "MIN_SHARED", "TERMS", "SecondSearch", "expanded_vector", "expansion_terms"]

log = logging.getLogger(__name__)

#: The first hits whose words seed the second search, how many of them must share a word, how many words.
FROM_HITS = 5
MIN_SHARED = 2
TERMS = 10


def expansion_terms(query: str, texts: Sequence[str], from_hits: int = FROM_HITS, limit: int = TERMS) -> list[str]:
    """The terms (``mnemo.shared.sparse.tokens``) that at least ``MIN_SHARED`` of the first ``from_hits``
    ``texts`` hold and ``query`` does not, most shared first (ties: first seen first), at most ``limit``."""
    asked = set(tokens(query))
    shared: Counter[str] = Counter()
    for text in texts[:from_hits]:
        shared.update(dict.fromkeys((t for t in tokens(text) if t not in asked), 1))
    return [t for t, n in shared.most_common(limit) if n >= MIN_SHARED]


def expanded_vector(base: SparseVector, extra: Sequence[str], weight: float) -> SparseVector:
    """``base`` with each of ``extra`` added at ``weight`` times its ``query_weight`` (a term ``base`` holds
    keeps its own weight)."""
    weights = dict(zip(base.indices, base.values, strict=True))
    for term in extra:
        w = weight * query_weight(term)
        if w > 0:
            weights.setdefault(term_id(term), w)
    ids = sorted(weights)
    return SparseVector(ids, [weights[i] for i in ids])


@dataclass(frozen=True)
class SecondSearch:
    """What the second search of one request needs: the text the first searched with, its lexical vector, the
    messages search to run again with another one (same dense vector and filter), the weight of the new words
    and the deadline."""

    text: str
    sparse: SparseVector
    search: Callable[[SparseVector], Awaitable[list[ScoredPoint]]]
    weight: float
    timeout_s: float

    async def again(self, first_texts: Sequence[str]) -> list[ScoredPoint] | None:
        """The messages found with the expanded query (``first_texts``: the first pool's texts, best first), or
        None to keep the first pool: nothing to add, or the search failed or was late."""
        extra = expansion_terms(self.text, first_texts)
        if self.weight <= 0 or not extra or not self.sparse:
            return None
        try:
            async with asyncio.timeout(self.timeout_s):
                return await self.search(expanded_vector(self.sparse, extra, self.weight))
        except Exception as exc:  # TimeoutError included: the first pool is a complete answer
            log.warning("second search skipped: %s: %s", type(exc).__name__, exc)
            return None
