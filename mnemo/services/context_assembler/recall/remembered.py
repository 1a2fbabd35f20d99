"""The memories written through the memory API that a context shows (issue 28): found, checked, ranked.

Who sees what is the memory search's rule (``mnemo/shared/namespaces.py``): a context's viewer
(``filters.context_viewer``) is its user as the speaking bot, in the request's campaign, so it sees the user's
``player:<user>`` namespace, ``campaign:<campaign_id>`` (only when the request names it) and
``character:<bot>``, each memory there only when it is for everyone or for that bot. The rule is inside the
vector query (``filters.context_memories_filter``) and checked again on read, so a character never finds what
it was not given, and another user's or tenant's memory cannot even be ranked.

Ranking: the hybrid query (dense and lexical, fused, as for summaries) decides which memories are candidates;
a memory's score is the best dense cosine of its chunks times the recency factor the memory search applies
(``scoring.recency_factor``: half-life from the request, else the settings, 0 = off), on the same scale as a
summary's so the budget compares them fairly. Near-duplicates go (``scoring.without_near_duplicates``), and at
most ``remembered_limit`` are offered to the budget, which packs them with the other scored sections.

Failures are never the reply's: the embed and the queries share ``retrieval_timeout_s`` (past it or on an
error, ``embedder`` or ``vector_index`` in ``degraded``); a failed read back names ``remembered``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from mnemo.services.context_assembler.gather.as_of import AsOf, until
from mnemo.services.context_assembler.items import RememberedItem
from mnemo.services.context_assembler.recall.candidates import from_memory
from mnemo.services.context_assembler.recall.filters import context_memories_filter, context_viewer
from mnemo.services.context_assembler.recall.scoring import recency_factor, without_near_duplicates
from mnemo.services.context_assembler.search.hits import best_per_key
from mnemo.services.context_assembler.search.query import query_sparse
from mnemo.services.context_assembler.settings import AssemblerSettings
from mnemo.shared.embedders.port import Embedder
from mnemo.shared.readmodels.memories import MemoryView
from mnemo.shared.readmodels.ports import MemoriesPort
from mnemo.shared.titles import short_title
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import Match, VectorIndex, VectorQuery, ranked
from mnemo_client.wire.contract import ContextAssembleRequest

log = logging.getLogger(__name__)
#: Chunks of one memory compete in the dense re-query: far above what the chunker makes of one memory.
CHUNKS_PER_MEMORY = 8


@dataclass(eq=False)
class RememberedRecall:
    """The remembered memories of one context request (:meth:`find`); never fails a request."""

    index: VectorIndex | None
    embedder: Embedder | None
    memories: MemoriesPort | None
    settings: AssemblerSettings

    async def find(
        self,
        req: ContextAssembleRequest,
        query: str,
        degraded: list[str],
        half_life_days: float,
        as_of: AsOf | None = None,
    ) -> list[RememberedItem]:
        """The best ``remembered_limit`` memories the speaking bot may be shown for ``query``, best first; with
        ``as_of``, only those that occurred by its time (``gather/as_of.py``), recency measured from it."""
        s = self.settings
        if self.memories is None or s.remembered_limit == 0 or not query.strip():
            return []
        if self.embedder is None or self.index is None:
            degraded.append("embedder" if self.embedder is None else "vector_index")
            return []
        stage = "embedder"
        try:
            async with asyncio.timeout(s.retrieval_timeout_s):
                [vector] = await self.embedder.embed([query])
                stage = "vector_index"
                flt, sparse = until(context_memories_filter(req), as_of), query_sparse(req, query)
                fused = await ranked(self.index, VectorQuery(vector, sparse, flt, s.remembered_limit * 2, s.min_score))
                ids = tuple(dict.fromkeys(v for h in fused if isinstance(v := h.payload.get(vp.MEMORY_ID), str)))
                if not ids:
                    return []
                among = flt.and_(Match(vp.MEMORY_ID, ids))
                dense = await self.index.search(VectorQuery.dense(vector, among, len(ids) * CHUNKS_PER_MEMORY))
        except Exception as exc:  # TimeoutError included: the memories are optional, the reply is not
            log.warning("remembered memories skipped (%s): %s: %s", stage, type(exc).__name__, exc)
            degraded.append(stage)
            return []
        cosine = best_per_key(dense, vp.MEMORY_ID)
        try:
            async with asyncio.timeout(s.read_timeout_s):  # in this task: no task of its own per request
                views = await self.memories.by_ids(req.tenant_id, list(ids))
        except Exception as exc:
            log.warning("remembered memories unreadable: %s: %s", type(exc).__name__, exc)
            degraded.append("remembered")
            return []
        viewer = context_viewer(req)
        visible = set(viewer.namespaces())
        now = as_of.epoch if as_of is not None else time.time()
        items = [
            _item(v, max(0.0, cosine.get(v.memory_id, 0.0)) * recency_factor(
                now - v.occurred_at.timestamp(), half_life_days, s.recency.floor))
            for v in views
            if v.tenant_id == req.tenant_id and v.owner_namespace in visible and viewer.sees(v.owner_namespace, v.audience)
            and (as_of is None or as_of.holds_time(v.occurred_at))
        ]  # fmt: skip
        items.sort(key=lambda i: (-i.score, i.memory_id))
        return without_near_duplicates(items, lambda i: i.text, s.remembered_limit)


def _item(v: MemoryView, score: float) -> RememberedItem:
    # A title someone gave says what the memory is about; a derived one only repeats the content's start.
    text = v.content.strip() if v.title == short_title(v.content) else f"{v.title}: {v.content.strip()}"
    why = f"{v.memory_type} memory of {v.owner_namespace}, {from_memory(v).origin}"
    return RememberedItem(v.memory_id, v.memory_type, text, score, why, v.assets, v.occurred_at)
