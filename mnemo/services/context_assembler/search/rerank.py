"""The re-ranking port: a model that scores (query, passage) pairs, e.g. a cross-encoder.

``ranking.rank_candidates`` uses its scores, where given, as the base score of each candidate instead of the
fused rank (the neighbour, participant and time levers still apply on top). The default is :class:`NoRerank`:
we found no cross-encoder whose weights ship inside a package this project can install offline (the
re-ranking packages we looked at, e.g. flashrank, and fastembed, download their models from a hub at run
time, which fails on these machines; see the shared infra guide), so the port is here for a deployment
that has one; an adapter for an ONNX cross-encoder would implement :meth:`Reranker.rerank`
with onnxruntime (already a dependency, for the bundled embedder) and squash its logits into [0, 1].

Contract: ``rerank`` returns one score in [0, 1] per passage, in the passages' order, higher is more
relevant; or None when it has nothing to say. A failure or a wrong length is ignored by the caller (the
fused order stands), so a re-ranker can improve retrieval but never break it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from mnemo.services.context_assembler.items import ChatLine

__all__ = ["NoRerank", "Reranker", "scores_by_id"]
log = logging.getLogger(__name__)


class Reranker(Protocol):
    async def rerank(self, query: str, passages: Sequence[str]) -> list[float] | None:
        """One relevance in [0, 1] per passage (same order), or None to keep the fused order."""
        ...


class NoRerank:
    """The default: no re-ranking model, the fused order stands."""

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float] | None:
        return None


async def scores_by_id(reranker: Reranker, query: str, lines: Sequence[ChatLine]) -> dict[str, float] | None:
    """The re-ranking model's scores by message id, or None (no model, no query, or it failed: the fused order
    stands, a re-ranker is an improvement, never a dependency)."""
    if not query.strip() or not lines:
        return None
    try:
        scores = await reranker.rerank(query, [line.content for line in lines])
    except Exception as exc:
        log.warning("re-ranker skipped: %s: %s", type(exc).__name__, exc)
        return None
    if scores is None or len(scores) != len(lines):
        return None
    return {line.message_id: score for line, score in zip(lines, scores, strict=True)}
