"""``mnemo.rpc.memory.search.v1``: ranked memories of every source a caller may see, with their score's parts.

The caller's namespaces are checked first (``mnemo/shared/namespaces.py``: another player's is ``forbidden``,
``character:<b>`` needs ``bot_id`` = b). Then one embed and, per source (remembered memories, summaries,
characters' facts, legacy memories), a hybrid query filtered inside the index (``filters.py``) for a pool of
candidates, a dense query restricted to the pool for each one's cosine, and a read back of their texts (checked
again on read); each is scored by ``scoring.py`` (dense, lexical, recency), near-duplicates are left out and
the best ``limit`` returned. An empty query lists the newest of each source instead. The embed and the vector
queries share ``retrieval_timeout_s``: past it, or when the embedder or index fails, the reply has no results
and says which part in ``degraded``, as a context does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from mnemo.services.context_assembler.recall import filters
from mnemo.services.context_assembler.recall.candidates import (
    Recalled,
    from_fact,
    from_legacy,
    from_memory,
    from_summary,
)
from mnemo.services.context_assembler.recall.scoring import Parts, lexical_share, recency_factor, score
from mnemo.services.context_assembler.recall.scoring import without_near_duplicates as distinct
from mnemo.services.context_assembler.search.hits import best_per_key
from mnemo.services.context_assembler.settings import AssemblerSettings
from mnemo.shared.aggregates.conversation import as_utc
from mnemo.shared.aggregates.knowledge import ACTIVE
from mnemo.shared.embedders.port import Embedder
from mnemo.shared.namespaces import Viewer, read_refusal
from mnemo.shared.presence import bot_may_see
from mnemo.shared.readmodels.catalog import KNOWLEDGE, LEGACY_LORE, MEMORIES, SUMMARIES, ReadModelPorts
from mnemo.shared.readmodels.legacy_lore import LegacyPage
from mnemo.shared.readmodels.memories import Clause
from mnemo.shared.readmodels.ports import KnowledgePort, LegacyLorePort, MemoriesPort, SummariesPort
from mnemo.shared.readmodels.summaries import SummaryPage
from mnemo.shared.sparse import query_vector
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import Match, SparseVector, VectorFilter, VectorIndex, VectorQuery, ranked
from mnemo_client.wire.memory_api_contract import (
    MemoryHit,
    MemorySearchReply,
    MemorySearchRequest,
    ScoreParts,
    namespace_kind,
)

log = logging.getLogger(__name__)
#: Candidates per source for each result asked (chunks of one item, and near-duplicates, take places).
POOL_FACTOR = 2
POOL_EXTRA = 4


class NamespaceRefused(PermissionError):
    """The search names a namespace its caller may not see (``forbidden``)."""


@dataclass(frozen=True)
class RecallReads:
    memories: MemoriesPort
    summaries: SummariesPort
    knowledge: KnowledgePort
    legacy: LegacyLorePort

    @classmethod
    def over(cls, ports: ReadModelPorts) -> RecallReads:
        return cls(ports.of(MEMORIES), ports.of(SUMMARIES), ports.of(KNOWLEDGE), ports.of(LEGACY_LORE))


Reader = Callable[[Sequence[str]], Awaitable[list[Recalled]]]


def scope(req: MemorySearchRequest) -> tuple[Viewer, list[str]]:
    """Who searches and the namespaces searched; NamespaceRefused for one the caller may not name."""
    for ns in req.namespaces or ():
        if (why := read_refusal(ns, req.user_id, req.bot_id)) is not None:
            raise NamespaceRefused(why)
    campaigns = tuple(owner for kind, owner in map(namespace_kind, req.namespaces or ()) if kind == "campaign")
    viewer = Viewer(req.tenant_id, req.user_id, req.bot_id, campaigns)
    return viewer, filters.namespaces_of(viewer, req)


class MemorySearch:
    def __init__(
        self, index: VectorIndex | None, embedder: Embedder | None, reads: RecallReads, settings: AssemblerSettings
    ) -> None:
        self._index = index
        self._embedder = embedder
        self._reads = reads
        self._settings = settings

    def half_life(self, req: MemorySearchRequest) -> float:
        given = req.recency_half_life_days
        return self._settings.recency.half_life_days if given is None else given

    async def search(self, req: MemorySearchRequest) -> MemorySearchReply:
        viewer, namespaces = scope(req)
        degraded: list[str] = []
        if req.query.strip():
            found = await self._matches(req, viewer, namespaces, degraded)
        else:
            found = [(r, Parts(0.0, 0.0, 1.0)) for r in await self._newest(req, viewer, namespaces)]
        now, half_life = time.time(), self.half_life(req)
        has_words = bool(query_vector(req.query))
        scored = []
        for item, parts in found:
            recency = recency_factor(now - item.occurred_at.timestamp(), half_life, self._settings.recency.floor)
            parts = Parts(parts.dense, parts.lexical, recency)
            value = score(parts, has_words) if req.query.strip() else recency
            scored.append((value, item, parts))
        scored.sort(key=lambda x: (-x[0], -x[1].occurred_at.timestamp(), x[1].id))
        best = distinct(scored, lambda x: x[1].text, req.limit)
        return MemorySearchReply(results=[_hit(item, value, parts) for value, item, parts in best], degraded=degraded)

    # --- with a query --------------------------------------------------------------------------------------
    def _sources(
        self, req: MemorySearchRequest, viewer: Viewer, namespaces: list[str]
    ) -> list[tuple[str, list[VectorFilter], str, Reader]]:
        """(kind, filters, payload key, reader) per source the request searches."""
        wanted = set(req.sources or ("memory", "summary", "knowledge", "legacy_lore"))
        out: list[tuple[str, list[VectorFilter], str, Reader]] = []
        if "memory" in wanted:
            memory_filters = filters.memory_filters(viewer, namespaces, req)
            out.append(("memory", memory_filters, vp.MEMORY_ID, lambda ids: self._memories(viewer, namespaces, ids)))
        summary = filters.summary_filter(viewer, namespaces, req) if "summary" in wanted else None
        if summary is not None:
            out.append(("summary", [summary], vp.SUMMARY_ID, lambda ids: self._summaries(viewer, ids)))
        fact = filters.fact_filter(viewer, namespaces) if "knowledge" in wanted else None
        if fact is not None:
            out.append(("knowledge", [fact], vp.FACT_ID, lambda ids: self._facts(req, viewer, namespaces, ids)))
        legacy = filters.legacy_filter(viewer, namespaces, req) if "legacy_lore" in wanted else None
        if legacy is not None:
            out.append(("legacy_lore", [legacy], vp.LEGACY_ID, lambda ids: self._legacy(viewer, ids)))
        return out

    async def _matches(
        self, req: MemorySearchRequest, viewer: Viewer, namespaces: list[str], degraded: list[str]
    ) -> list[tuple[Recalled, Parts]]:
        if self._embedder is None or self._index is None:
            degraded.append("embedder" if self._embedder is None else "vector_index")
            return []
        sources = self._sources(req, viewer, namespaces)
        pool = req.limit * POOL_FACTOR + POOL_EXTRA
        stage = "embedder"
        try:
            async with asyncio.timeout(self._settings.retrieval_timeout_s):
                [vector] = await self._embedder.embed([req.query])
                stage = "vector_index"
                sparse = query_vector(req.query)
                cosines = await asyncio.gather(
                    *(self._cosines(vector, sparse, flts, key, pool) for _, flts, key, _ in sources)
                )
        except Exception as exc:  # TimeoutError included: the caller gets an answer saying what failed
            log.warning("memory search skipped (%s): %s: %s", stage, type(exc).__name__, exc)
            degraded.append(stage)
            return []
        found: list[tuple[Recalled, Parts]] = []
        for (kind, _, _, read), best in zip(sources, cosines, strict=True):
            if not best:
                continue
            try:
                items = await read(list(best))
            except Exception as exc:
                log.warning("memory search could not read %s: %s: %s", kind, type(exc).__name__, exc)
                degraded.append(kind)
                continue
            found += [(i, Parts(best[i.id], lexical_share(req.query, i.text), 1.0)) for i in items]
        return found

    async def _cosines(
        self, vector: Sequence[float], sparse: SparseVector, flts: list[VectorFilter], key: str, pool: int
    ) -> dict[str, float]:
        """The pool the hybrid queries take (fusion order), each id with its best dense cosine."""
        assert self._index is not None
        ids: dict[str, None] = {}
        for flt in flts:
            hits = await ranked(self._index, VectorQuery(vector, sparse, flt, pool, self._settings.min_score))
            ids.update(dict.fromkeys(v for h in hits if isinstance(v := h.payload.get(key), str)))
        if not ids:
            return {}
        cosines: dict[str, float] = {}
        for flt in flts:  # a long item has several chunks: 8 per id is far above what the chunker makes of one
            dense = await self._index.search(VectorQuery.dense(vector, flt.and_(Match(key, tuple(ids))), len(ids) * 8))
            for k, v in best_per_key(dense, key).items():
                cosines[k] = max(v, cosines.get(k, 0.0))
        return {k: cosines.get(k, 0.0) for k in ids}

    # --- readers: each checks again on read what the vector filter applied ----------------------------------
    async def _memories(self, viewer: Viewer, namespaces: list[str], ids: Sequence[str]) -> list[Recalled]:
        views = await self._reads.memories.by_ids(viewer.tenant_id, ids)
        return [
            from_memory(v)
            for v in views
            if v.owner_namespace in namespaces and viewer.sees(v.owner_namespace, v.audience)
        ]

    async def _summaries(self, viewer: Viewer, ids: Sequence[str]) -> list[Recalled]:
        views = await self._reads.summaries.by_ids(viewer.tenant_id, ids, user_id=viewer.user_id)
        bot = viewer.bot_id
        return [from_summary(v) for v in views if v.active and (bot is None or bot_may_see(bot, v.audience))]

    async def _facts(
        self, req: MemorySearchRequest, viewer: Viewer, namespaces: list[str], ids: Sequence[str]
    ) -> list[Recalled]:
        views = await self._reads.knowledge.by_ids(viewer.tenant_id, ids)
        out = []
        for v in views:
            mine = v.scope == f"player:{viewer.user_id}" and v.user_id == viewer.user_id
            as_bot = viewer.bot_id is not None and v.character_id == viewer.bot_id
            if v.status != ACTIVE or v.scope not in namespaces or not (as_bot or (mine and viewer.bot_id is None)):
                continue
            if req.types is not None and v.fact_type not in req.types:
                continue
            if req.tags and not _tagged(v.tags, req.tags, req.tags_match == "all"):
                continue
            out.append(from_fact(v))
        return [r for r in out if _in_window(r, req)]

    async def _legacy(self, viewer: Viewer, ids: Sequence[str]) -> list[Recalled]:
        views = await self._reads.legacy.by_ids(viewer.tenant_id, ids, user_id=viewer.user_id)
        bot = viewer.bot_id
        return [from_legacy(v) for v in views if bot is None or bot in v.applies_to]

    # --- without a query: the newest -----------------------------------------------------------------------
    async def _newest(self, req: MemorySearchRequest, viewer: Viewer, namespaces: list[str]) -> list[Recalled]:
        """The newest remembered memories of the namespaces (and the viewer's own derived ones), newest first."""
        out: list[Recalled] = []
        wanted = set(req.sources or ("memory", "summary", "knowledge", "legacy_lore"))
        if "memory" in wanted:
            clauses = [Clause(ns, _bots(viewer.audiences(ns))) for ns in namespaces if viewer.audiences(ns) != ()]
            views = await self._reads.memories.newest(
                viewer.tenant_id, clauses, types=req.types, tags=req.tags, all_tags=req.tags_match == "all",
                since=req.since, until=req.until, limit=req.limit,
            )  # fmt: skip
            out += [from_memory(v) for v in views]
        if "knowledge" in wanted and filters.fact_filter(viewer, namespaces) is not None:
            facts, _ = await self._reads.knowledge.page(
                viewer.tenant_id, viewer.user_id, character_id=viewer.bot_id, limit=req.limit
            )
            out += await self._facts(req, viewer, namespaces, [f.fact_id for f in facts])
        if "summary" in wanted and filters.summary_filter(viewer, namespaces, req) is not None:
            asked = SummaryPage(viewer.tenant_id, viewer.user_id, participant=viewer.bot_id)
            listed, _ = await self._reads.summaries.listed(asked, 0, req.limit)
            out += await self._summaries(viewer, [s.view.summary_id for s in listed])
        if "legacy_lore" in wanted and filters.legacy_filter(viewer, namespaces, req) is not None:
            kept, _ = await self._reads.legacy.listed(
                LegacyPage(viewer.tenant_id, viewer.user_id, viewer.bot_id), 0, req.limit
            )
            out += [from_legacy(v) for v in kept]
        return [r for r in out if _in_window(r, req)]


def _bots(audiences: tuple[str, ...] | None) -> tuple[str | None, ...] | None:
    """The ``bot_id`` values a memory row may have for these audiences (``*`` is a row without a character)."""
    if audiences is None:
        return None
    return tuple(None if a == "*" else a for a in audiences)


def _tagged(have: Sequence[str], wanted: Sequence[str], every: bool) -> bool:
    return set(wanted) <= set(have) if every else bool(set(wanted) & set(have))


def _in_window(item: Recalled, req: MemorySearchRequest) -> bool:
    when = as_utc(item.occurred_at)
    return (req.since is None or when >= as_utc(req.since)) and (req.until is None or when < as_utc(req.until))


def _hit(item: Recalled, value: float, parts: Parts) -> MemoryHit:
    return MemoryHit.model_validate(
        {
            "id": item.id,
            "source": item.source,
            "namespace": item.namespace,
            "type": item.type,
            "title": item.title,
            "content": item.content,
            "tags": list(item.tags),
            "assets": list(item.assets),
            "metadata": item.metadata or {},
            "bot_id": item.bot_id,
            "conversation_id": item.conversation_id,
            "occurred_at": item.occurred_at,
            "score": round(value, 6),
            "score_parts": ScoreParts(
                dense=round(parts.dense, 6), lexical=round(parts.lexical, 6), recency=round(parts.recency, 6)
            ),
            "origin": item.origin,
        }
    )
