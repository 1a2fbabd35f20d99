"""The retrieved-messages section: the searched pool read back, searched again when configured, and re-ranked.

The pool (several times the slots, fused order) comes from the messages search (``searches.py``); the read
model gives each id its text, author and place in the conversation (an id it does not return, deleted or not
witnessed by the speaking bot, is left out). With a second search configured (``expansion.py``) the first
pool's texts seed it and its pool replaces the first; only the ids not read yet are read. Then
``ranking.rank_candidates`` orders the pool (fused rank, neighbours, the named participant or participants, their
aliases, the referred time and the turns that say when, near-duplicates, MMR, the optional re-ranking model of
``rerank.py``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import replace

from mnemo.services.context_assembler.items import ChatLine
from mnemo.services.context_assembler.search.expansion import SecondSearch
from mnemo.services.context_assembler.search.hits import Found, best_per_key, candidates, created_at_by_key
from mnemo.services.context_assembler.search.levers import DEFAULT_LEVERS, RankLevers
from mnemo.services.context_assembler.search.ranking import rank_candidates
from mnemo.services.context_assembler.search.rerank import Reranker, scores_by_id
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import ScoredPoint

#: Reads messages by id (the read model, under the request's deadline; a failure gives none and is named in
#: ``degraded`` by the caller's reader).
ReadLines = Callable[[list[str]], Awaitable[list[ChatLine]]]


def _pool(points: Sequence[ScoredPoint], exclude: Collection[str]) -> tuple[list[ScoredPoint], list[str]]:
    kept = [p for p in points if p.payload.get(vp.MESSAGE_ID) not in exclude]
    return kept, list(best_per_key(kept, vp.MESSAGE_ID))


async def retrieved_lines(
    query: str,
    found: Found,
    exclude: Collection[str],
    read: ReadLines,
    limit: int,
    reranker: Reranker,
    second: SecondSearch | None = None,
    levers: RankLevers = DEFAULT_LEVERS,
) -> list[ChatLine]:
    """The ``limit`` best messages of ``found`` (those in ``exclude``, the history window, left out), each with
    its relevance in [0, 1] as ``score`` (monotone with the order they are packed in; never the fusion
    score). ``query`` is the user's message as asked (the ranking reads who and when it names); ``levers``
    are the ranking's (``levers.py``)."""
    kept, pool = _pool(found.points, exclude)
    if not pool or limit <= 0:
        return []
    by_id = {line.message_id: line for line in await read(pool)}
    if second is not None:
        again = await second.again([by_id[k].content for k in pool if k in by_id])
        if again is not None:
            kept, pool = _pool(again, exclude)
            missing = [k for k in pool if k not in by_id]
            by_id |= {line.message_id: line for line in (await read(missing) if missing else [])}
    ranked = rank_candidates(
        query,
        candidates(pool, by_id, created_at_by_key(kept, vp.MESSAGE_ID)),
        limit,
        now=time.time(),
        rerank=await scores_by_id(reranker, query, [by_id[k] for k in pool if k in by_id]),
        levers=levers,
    )
    return [replace(by_id[key], score=score) for key, score in ranked]
