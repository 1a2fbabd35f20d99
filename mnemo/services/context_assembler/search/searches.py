"""The vector searches of a context request: memories, messages, legacy memories, the bot's facts and the
memories written through the memory API (the ``remembered`` ones, read and ranked by ``recall/remembered.py``).

One embed and the searches share one deadline, ``retrieval_timeout_s``; a failure or a timeout skips them
all and names the stage (``embedder`` or ``vector_index``) in ``degraded``: retrieval is optional, the reply
is not. Every search is filtered inside the query (``search_filters.py``).

Hybrid retrieval: when the query has words (``mnemo/shared/sparse.py``), each search is one ``hybrid_search``, a
score fusion (the engine's DBSF) of the dense and the lexical prefetch, both filtered inside the query; it decides
WHICH summaries and messages are taken (the fused order, best chunk per message). A summary's or legacy
memory's ``score`` is its best dense cosine, read by a second, dense search restricted to the taken ids
(sub-millisecond in-process). Messages are searched as a pool of three times their slots, re-ranked after
they are read back (``ranking.py``). ``min_score`` bounds the dense side only (a lexical match enters with
any cosine). Without words (e.g. only emoji) the search is dense only. The hybrid searches go to the index
as one batch (``hybrid_search_many``): the summaries', legacy memories', facts' and remembered memories'
searches, then the messages' pool and its dated part (two batches only when the history window is not known
yet when the query is embedded: :meth:`VectorSearch.run`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection, Sequence

from mnemo.services.context_assembler.gather.as_of import AsOf, until
from mnemo.services.context_assembler.recall.filters import context_memories_filter
from mnemo.services.context_assembler.search.expansion import SecondSearch
from mnemo.services.context_assembler.search.filters import (
    dated_filter,
    facts_filter,
    legacy_filter,
    memories_filter,
    messages_filter,
)
from mnemo.services.context_assembler.search.hits import Found, Hits, best_per_key
from mnemo.services.context_assembler.search.query import query_sparse
from mnemo.services.context_assembler.settings import AssemblerSettings
from mnemo.shared.embedders.port import Embedder
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import Match, ScoredPoint, SparseVector, VectorFilter, VectorIndex, VectorQuery, ranked
from mnemo_client.wire.contract import ContextAssembleRequest

log = logging.getLogger(__name__)


class VectorSearch:
    """The searches of one request, on the index and the embedder the assembler was given (either None: no
    search, and the sections that need it are named in ``degraded``)."""

    def __init__(
        self,
        index: VectorIndex | None,
        embedder: Embedder | None,
        settings: AssemblerSettings,
        remembered: bool = False,
    ) -> None:
        """``remembered``: the memory API's memories are searched too (the assembler has their read model)."""
        self._index = index
        self._embedder = embedder
        self._settings = settings
        self._remembered = remembered

    async def run(
        self,
        req: ContextAssembleRequest,
        text: str,
        history_ids: Sequence[str] | asyncio.Future[list[str]],
        degraded: list[str],
        other_branches: Collection[str] = (),
        as_of: AsOf | None = None,
    ) -> Hits:
        """Everything ``text`` finds for ``req``; messages in ``history_ids`` (the history window) excluded;
        with ``as_of``, messages, summaries, legacy memories and remembered memories of later times too
        (``gather/as_of.py``; facts are cut on read, their points carry no time).

        ``history_ids`` may come later (a future: the window shown depends on the lore the budget takes). When
        it is known by the time the query is embedded (the common case: the lore is activated while the model
        runs), every hybrid search of the request is ONE ``hybrid_search_many``: each call to the in-process
        engine costs about a millisecond whatever it holds (bench-context, 100,000 points), and three calls
        (the early searches, the messages', the remembered memories') were most of the time after the embed.
        When it is not known yet, the summaries', legacy memories', facts' and remembered memories' searches
        run while it is awaited and the messages' after it. Each of the two stages has
        ``retrieval_timeout_s``; the wait between them counts in neither."""
        s = self._settings
        sections = any((s.memories_limit, s.retrieved_limit, s.legacy_limit))  # the parts only search fills
        remember = self._remembered and s.remembered_limit > 0
        if not text.strip() or not (sections or s.knowledge_limit or remember):
            return Hits()
        if self._embedder is None or self._index is None:
            # The facts are shown without the search (newest first): a missing search degrades only the
            # sections that need it.
            if sections or remember:
                degraded.append("embedder" if self._embedder is None else "vector_index")
            return Hits()
        stage = "embedder"
        early: asyncio.Future[list[Found]] | None = None
        try:
            async with asyncio.timeout(s.retrieval_timeout_s):
                [vector] = await self._embedder.embed([text])
                stage = "vector_index"
                sparse = query_sparse(req, text)
                remembered_limit = s.remembered_limit * 2 if remember else 0
                searches = [
                    (until(memories_filter(req, other_branches), as_of), s.memories_limit * 2, vp.SUMMARY_ID),
                    (until(legacy_filter(req), as_of), s.legacy_limit * 2, vp.LEGACY_ID),
                    (facts_filter(req), s.knowledge_limit, vp.FACT_ID),
                    # The memory API's memories (recall/remembered.py reads and ranks them).
                    (until(context_memories_filter(req), as_of), remembered_limit, vp.MEMORY_ID),
                ]
                known = isinstance(history_ids, Sequence) or history_ids.done()
                if not known:
                    early = asyncio.ensure_future(self._find_all(vector, sparse, searches))
            shown = history_ids if isinstance(history_ids, Sequence) else await history_ids
            async with asyncio.timeout(s.retrieval_timeout_s):
                in_conversation = until(messages_filter(req, shown), as_of)
                # "Yesterday" as of the picked message means the day before it.
                now = as_of.epoch if as_of is not None else time.time()
                in_window = dated_filter(in_conversation, req.user_message, now)
                pools = [
                    # A pool of three times the slots, re-ranked in Gatherer._retrieved (and several chunks of
                    # one message may match).
                    (in_conversation, s.retrieved_limit * 3),
                    # The time the message refers to ("on 29 Dec 2023") searched on its own, so messages of
                    # that day compete even when the whole conversation has better matches.
                    *([(in_window, s.retrieved_limit)] if in_window else []),
                ]
                if early is None:
                    found = await self._pools(vector, sparse, [*((f, n) for f, n, _ in searches), *pools])
                    first, rest = found[: len(searches)], found[len(searches) :]
                    memories, legacy, facts, remembered = await self._scored(vector, sparse, searches, first)
                else:
                    rest = await self._pools(vector, sparse, pools)
                    memories, legacy, facts, remembered = await early
                messages, dated = rest[0], rest[1] if in_window else []
        except Exception as exc:  # TimeoutError included: retrieval is optional, the reply is not
            log.warning("retrieval skipped (%s): %s: %s", stage, type(exc).__name__, exc)
            degraded.append(stage)
            return Hits()
        finally:
            if early is not None and not early.done():
                early.cancel()
            elif early is not None and not early.cancelled():
                early.exception()  # retrieved: a failure after the request gave up is not logged again
        second = None
        if s.second_search_weight > 0 and sparse:
            flt, pool = until(messages_filter(req, shown), as_of), s.retrieved_limit * 3

            async def again(expanded: SparseVector) -> list[ScoredPoint]:
                return [*await self._pool(vector, expanded, flt, pool), *dated]

            second = SecondSearch(text, sparse, again, s.second_search_weight, s.retrieval_timeout_s)
        # Both lists carry fusion scores of the same scale; best_per_key interleaves them by score.
        messages_found = Found([*messages, *dated], None)
        return Hits(memories, messages_found, legacy, facts, searched=True, second=second, remembered=remembered)

    async def _pools(
        self, vector: Sequence[float], sparse: SparseVector, pools: Sequence[tuple[VectorFilter, int]]
    ) -> list[list[ScoredPoint]]:
        """:meth:`_pool` of each (filter, limit), the hybrid ones in one batch (``hybrid_search_many``)."""
        assert self._index is not None
        if not sparse:
            return [await self._pool(vector, sparse, flt, limit) for flt, limit in pools]
        asked = [VectorQuery(vector, sparse, flt, limit, self._settings.min_score) for flt, limit in pools if limit > 0]
        found = iter(await self._index.hybrid_search_many(asked) if asked else [])
        return [next(found) if limit > 0 else [] for _, limit in pools]

    async def _pool(
        self, vector: Sequence[float], sparse: SparseVector, flt: VectorFilter, limit: int
    ) -> list[ScoredPoint]:
        """Candidate messages, best first: hybrid (fusion scores) when the query has words, else dense."""
        assert self._index is not None
        if limit <= 0:
            return []
        return await ranked(self._index, VectorQuery(vector, sparse, flt, limit, self._settings.min_score))

    async def _find_all(
        self, vector: Sequence[float], sparse: SparseVector, searches: Sequence[tuple[VectorFilter, int, str]]
    ) -> list[Found]:
        """Each (filter, limit, key) search: hybrid when the query has words (the fused searches in one batch,
        then :meth:`_scored`), dense only otherwise; nothing when its ``limit`` is 0."""
        fused = await self._pools(vector, sparse, [(flt, limit) for flt, limit, _ in searches])
        return await self._scored(vector, sparse, searches, fused)

    async def _scored(
        self,
        vector: Sequence[float],
        sparse: SparseVector,
        searches: Sequence[tuple[VectorFilter, int, str]],
        found: Sequence[list[ScoredPoint]],
    ) -> list[Found]:
        """The hits of each (filter, limit, key) search with the best dense cosine of each key (:meth:`_cosines`)
        when they are fused; a dense search's hits are cosines already, except the remembered memories',
        whose scores are always those of the dense re-query (``recall/remembered.py``)."""
        # The dense re-queries one after the other: in process (Qdrant Edge) a query never yields the loop, so
        # tasks to run them "together" would only add their own cost.
        return [
            Found(hits, await self._cosines(vector, flt, hits, key) if sparse or key == vp.MEMORY_ID else None)
            if limit > 0
            else Found([], None)
            for hits, (flt, limit, key) in zip(found, searches, strict=True)
        ]

    async def _cosines(
        self, vector: Sequence[float], flt: VectorFilter, fused: list[ScoredPoint], key: str
    ) -> dict[str, float]:
        """The best dense cosine of each ``key`` value of the fused hits, by a dense search among their chunks."""
        assert self._index is not None
        keys = tuple(dict.fromkeys(v for h in fused if isinstance(v := h.payload.get(key), str)))
        if not keys:
            return {}
        # Every chunk of the taken ids competes here; 8 chunks per id is far above what the chunker makes of
        # a chat message, and an id whose chunks all fall past it just shows a 0 score.
        dense = await self._index.search(VectorQuery.dense(vector, flt.and_(Match(key, keys)), len(keys) * 8))
        return best_per_key(dense, key)
