"""The vector index on Qdrant Edge: the real Qdrant engine running in-process (one shard = one collection).

Contract: see ``mnemo/shared/vectors/port.py``. Specific to this adapter:

- One handle per path per process. The shard's WAL takes an OS lock, and a second ``EdgeShard.load`` of the
  same directory fails at once (``Can't init WAL: WouldBlock``), even from the same process. Build this
  adapter once per process (``mnemo/shared/vectors/factory.py``) and share it.
- The binding holds the GIL inside every engine call (measured: a 10 ms ``sleep`` on another thread took
  5.2 s while ``optimize()`` ran over 20k points, and 0.42 s during a 20k-point upsert). A worker thread
  therefore does not keep the event loop serving during a long call; what keeps it serving is keeping each
  call short. Upserts are cut into batches of ``upsert_batch`` points (about 5 ms each at 384-d), each one its
  own ``to_thread`` hop, so the loop runs between batches. Searches, counts and retrieves take well under a
  millisecond on a tenant-filtered query (0.04-0.1 ms measured at 20k points) and run on the loop.
- ``optimize()`` builds the HNSW and payload-indexed segments. Until it runs, new points are searched
  exactly (correct, slower as the shard grows). It blocks for tens of seconds at 50k+ points and, because of
  the GIL, stalls the whole process for that time: run it from a maintenance command or at start-up, not on
  a serving path.
- Writes and ``close()`` share a lock so a close never lands between two batches of an upsert.
- Each shard's search pool runs ``search_threads`` threads (setting ``vectors.search_threads``; why one by
  default: ``SEARCH_THREADS``). The engine persists the count in the shard, so the adapter always passes one.
- Hybrid search: new shards get a sparse vector ``lexical`` (IDF modifier) next to ``dense``. A shard
  created before it cannot gain it: the engine refuses a config whose vector set differs from the stored
  segments ("config is incompatible with existing segments"). Such a shard is opened as it is, upserts
  drop their sparse part, ``hybrid_search`` answers with the dense search and a warning is logged once;
  to get lexical matching, rebuild the index (delete the shard directory and ``mnemo replay``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qdrant_edge import (
    CountRequest,
    Distance,
    EdgeConfig,
    EdgeShard,
    EdgeSparseVectorParams,
    EdgeVectorParams,
    FieldCondition,
    Filter,
    FloatIndexParams,
    Fusion,
    KeywordIndexParams,
    MatchAny,
    MatchValue,
    Modifier,
    PayloadSchemaType,
    Point,
    Prefetch,
    Query,
    QueryBatchRequest,
    QueryRequest,
    RangeFloat,
    UpdateOperation,
)
from qdrant_edge import SparseVector as EdgeSparseVector

from mnemo.shared.settings import VectorsSettings
from mnemo.shared.vectors.engine import IndexKind, payload_indexes, payload_of, point_id, translate
from mnemo.shared.vectors.port import (
    SPARSE_NAME,
    VECTOR_NAME,
    ScoredPoint,
    VectorFilter,
    VectorIndexUnavailable,
    VectorPoint,
    VectorQuery,
)

log = logging.getLogger(__name__)

#: Threads of each shard's search pool unless told: ``vectors.search_threads``' default, one. The engine's own default
#: sizes the pool from the CPUs and hands every search to it; on a shard of one or two segments the hand-off costs more
#: than the parallel reads save, and the pool slows the model's threads beside it. Measured 2026-11-29 on the saved
#: ``bench-context`` scene (100,000 points, 2 cores; the assembler's captured batches of 1-6 hybrid queries replayed,
#: alternated runs): batch p50 2.03-2.37 ms on one thread against 2.99-3.08 on the default pool (1.00 CPU-second per
#: second against 1.15), and a query embedding in the same process 5.8-6.8 ms beside a one-thread pool against 6.8-7.7
#: beside an eight-thread one; inside requests the batch went from 3.2-4.4 to 2.9-3.0 ms (docs/benchmarks.md). More
#: threads can pay on a shard of many segments with idle cores.
SEARCH_THREADS: int = VectorsSettings.model_fields["search_threads"].default


class EdgeVectorIndex:
    """``VectorIndex`` on a Qdrant Edge shard stored at ``path / collection``."""

    def __init__(
        self, path: Path, collection: str, *, upsert_batch: int = 256, search_threads: int = SEARCH_THREADS
    ) -> None:
        if search_threads < 1:
            raise ValueError(f"search_threads must be at least 1, not {search_threads}")
        self._dir = Path(path) / collection
        self._upsert_batch = upsert_batch
        self._search_threads = search_threads
        self._shard: EdgeShard | None = None
        self._has_sparse = True  # False for a shard created before the lexical vector existed
        self._lock = threading.Lock()  # writes, open and close

    async def ensure_collection(self, dimensions: int) -> None:
        """Open the shard (create it on first use) and add any missing payload index. Idempotent."""
        await asyncio.to_thread(self._open, dimensions)

    def _open(self, dimensions: int) -> None:
        with self._lock:
            if self._shard is None:
                dense = {VECTOR_NAME: EdgeVectorParams(size=dimensions, distance=Distance.Cosine)}
                config = EdgeConfig(
                    vectors=dense,
                    sparse_vectors={SPARSE_NAME: EdgeSparseVectorParams(modifier=Modifier.Idf)},
                    max_search_threads=self._search_threads,
                )
                exists = self._dir.is_dir() and any(self._dir.iterdir())
                try:
                    if not exists:
                        self._shard = EdgeShard.create(str(self._dir), config)
                    else:
                        try:
                            self._shard = EdgeShard.load(str(self._dir), config)
                        except Exception as exc:
                            if "incompatible" not in str(exc):
                                raise
                            dense_only = EdgeConfig(vectors=dense, max_search_threads=self._search_threads)
                            self._shard = EdgeShard.load(str(self._dir), dense_only)
                            self._has_sparse = False
                            log.warning(
                                "Qdrant Edge shard %s has no %r vector: hybrid search falls back to dense; "
                                "rebuild it (delete the directory, mnemo replay) for lexical matching",
                                self._dir,
                                SPARSE_NAME,
                            )
                except Exception as exc:  # the binding raises plain Exception
                    raise VectorIndexUnavailable(f"cannot open Qdrant Edge shard at {self._dir}: {exc}") from exc
            shard = self._shard
            present = set(shard.info().payload_schema)
            for name, kind in payload_indexes().items():
                if name not in present:
                    shard.update(UpdateOperation.create_field_index(name, _index_schema(kind)))

    def _require(self) -> EdgeShard:
        if self._shard is None:
            raise VectorIndexUnavailable("Qdrant Edge shard is not open (ensure_collection not run, or closed)")
        return self._shard

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        for start in range(0, len(points), self._upsert_batch):
            await asyncio.to_thread(self._upsert_sync, points[start : start + self._upsert_batch])

    def _upsert_sync(self, points: Sequence[VectorPoint]) -> None:
        batch = [Point(point_id(p.id), self._vectors(p), dict(p.payload)) for p in points]
        with self._lock:
            self._require().update(UpdateOperation.upsert_points(batch))

    def _vectors(self, p: VectorPoint) -> dict[str, Any]:
        vectors: dict[str, Any] = {VECTOR_NAME: [float(x) for x in p.vector]}
        if p.sparse and self._has_sparse:
            vectors[SPARSE_NAME] = EdgeSparseVector(list(p.sparse.indices), [float(x) for x in p.sparse.values])
        return vectors

    async def search(self, query: VectorQuery) -> list[ScoredPoint]:
        hits = self._require().query(_dense_request(query))
        return [ScoredPoint(str(h.id), float(h.score), payload_of(h.payload)) for h in hits]

    async def hybrid_search(self, query: VectorQuery) -> list[ScoredPoint]:
        """DBSF of the dense and the lexical prefetch, both filtered (see the port)."""
        hits = self._require().query(self._hybrid_request(query))
        return [ScoredPoint(str(h.id), float(h.score), payload_of(h.payload)) for h in hits]

    async def hybrid_search_many(self, queries: Sequence[VectorQuery]) -> list[list[ScoredPoint]]:
        """The queries as one ``query_batch``: measured 2026-11-27 on 10,000 points, three hybrid queries
        differing in their filter took 1.05 ms as a batch against 2.18 ms one by one (load 15)."""
        if not queries:
            return []
        batch = QueryBatchRequest(queries=[self._hybrid_request(q) for q in queries])
        return [
            [ScoredPoint(str(h.id), float(h.score), payload_of(h.payload)) for h in hits]
            for hits in self._require().query_batch(batch)
        ]

    def _hybrid_request(self, query: VectorQuery) -> QueryRequest:
        """The query's DBSF request, or its dense one on a shard without the lexical vector."""
        if not self._has_sparse:
            return _dense_request(query)
        edge_filter = to_edge_filter(query.flt)
        limit, sparse = query.limit, query.sparse
        prefetches = [
            Prefetch(
                limit=limit,
                query=Query.Nearest([float(x) for x in query.vector], using=VECTOR_NAME),
                filter=edge_filter,
                score_threshold=query.score_threshold,
            )
        ]
        if sparse:
            lexical = EdgeSparseVector(list(sparse.indices), [float(x) for x in sparse.values])
            prefetches.append(
                Prefetch(limit=limit, query=Query.Nearest(lexical, using=SPARSE_NAME), filter=edge_filter)
            )
        # No filter on the fusion itself: every prefetch carries it, so every fused point matches it, and the
        # engine ANDs a top-level filter into each prefetch, testing each condition twice per point. Measured
        # 2026-11-29 on the 300 batches of a bench-context run, replayed in alternated pairs: 0.37-0.48 ms less
        # per batch (1.3-1.6 ms against 1.6-2.1), faster in 99-100 % of pairs, the same points (ties aside).
        return QueryRequest(
            limit=limit,
            prefetches=prefetches,
            query=Fusion.Dbsf(),  # type: ignore[arg-type]  # the stub's union names Fusion, not Fusion.Dbsf
            with_payload=True,
            with_vector=False,
        )

    async def delete(self, flt: VectorFilter) -> None:
        """Delete the points matching ``flt``; an empty filter is refused rather than wiping the index."""
        edge_filter = to_edge_filter(flt)
        if edge_filter is None:
            raise ValueError("delete needs at least one condition")
        await asyncio.to_thread(self._update, UpdateOperation.delete_points_by_filter(edge_filter))

    async def delete_ids(self, ids: Sequence[str]) -> None:
        if ids:
            op = UpdateOperation.delete_points([point_id(i) for i in ids])
            await asyncio.to_thread(self._update, op)

    def _update(self, op: UpdateOperation) -> None:
        with self._lock:
            self._require().update(op)

    async def count(self, flt: VectorFilter | None = None) -> int:
        request = CountRequest(exact=True, filter=to_edge_filter(flt) if flt else None)
        return int(self._require().count(request))

    async def retrieve(self, ids: Sequence[str]) -> list[ScoredPoint]:
        if not ids:
            return []
        records = self._require().retrieve([point_id(i) for i in ids], with_payload=True, with_vector=False)
        return [ScoredPoint(str(r.id), 0.0, payload_of(r.payload)) for r in records]

    async def flush(self) -> None:
        """Write pending segment changes to disk (the WAL already makes upserts durable)."""
        await asyncio.to_thread(self._flush_sync)

    def _flush_sync(self) -> None:
        with self._lock:
            self._require().flush()

    async def optimize(self) -> bool:
        """Build the indexed segments; True if anything changed. Stalls the process (see module docstring)."""
        return await asyncio.to_thread(self._optimize_sync)

    def _optimize_sync(self) -> bool:
        with self._lock:
            return bool(self._require().optimize())

    async def close(self) -> None:
        """Flush and release the shard (and its WAL lock). Idempotent."""
        await asyncio.to_thread(self._close_sync)

    def _close_sync(self) -> None:
        with self._lock:
            shard, self._shard = self._shard, None
            if shard is not None:
                shard.flush()
                shard.close()


def _index_schema(kind: IndexKind) -> Any:
    if kind == "tenant":
        return KeywordIndexParams(is_tenant=True)
    if kind == "float":
        return FloatIndexParams()
    return PayloadSchemaType.Keyword if kind == "keyword" else PayloadSchemaType.Integer


class _EdgeConditions:
    """The filter conditions of the qdrant-edge binding (``engine.FilterBuilder``)."""

    def equals(self, key: str, value: str | int) -> FieldCondition | Filter:
        return FieldCondition(key, match=MatchValue(value))

    def any_of(self, key: str, values: list[str] | list[int]) -> FieldCondition | Filter:
        return FieldCondition(key, match=MatchAny(values))

    def within(self, key: str, gte: float | None, lte: float | None) -> FieldCondition | Filter:
        return FieldCondition(key, range=RangeFloat(gte=gte, lte=lte))

    def one_of(self, conditions: list[FieldCondition | Filter]) -> FieldCondition | Filter:
        return Filter(should=conditions)  # type: ignore[arg-type]  # the stub's list is invariant


def _dense_request(query: VectorQuery) -> QueryRequest:
    return QueryRequest(
        limit=query.limit,
        query=Query.Nearest([float(x) for x in query.vector], using=VECTOR_NAME),
        filter=to_edge_filter(query.flt),
        score_threshold=query.score_threshold,
        with_payload=True,
        with_vector=False,
    )


def to_edge_filter(flt: VectorFilter) -> Filter | None:
    """Translate the port's filter; ``None`` when it has no conditions (matches every point)."""
    conditions = translate(flt, _EdgeConditions())
    if conditions is None:
        return None
    must, must_not = conditions
    return Filter(must=must or None, must_not=must_not or None)  # type: ignore[arg-type]
