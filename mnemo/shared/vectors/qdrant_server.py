"""The vector index on a Qdrant server through qdrant-client (the distributed deployment).

Contract: see ``mnemo/shared/vectors/port.py``. The collection has one named dense vector (cosine) and the same
payload indexes as the Edge adapter, ``tenant_id`` marked ``is_tenant`` so Qdrant co-locates a tenant's
points. Transport failures (connection refused, timeouts, 5xx) become ``VectorIndexUnavailable`` so callers
degrade; 4xx answers are programming errors and propagate.

qdrant-client's local mode (``AsyncQdrantClient(location=":memory:")``) runs this same code in tests; it
is brute force and ignores payload indexes (creating them only logs a warning), so it is a test double for
the API, not an engine.

Hybrid search: new collections also get the sparse vector ``lexical`` (IDF modifier). Qdrant cannot add a
vector to an existing collection (``update_collection`` only changes the parameters of vectors that exist),
so a collection created before it is used as it is: upserts drop their sparse part, ``hybrid_search``
answers with the dense search, and a warning is logged; recreate the collection and ``mnemo replay`` to get
lexical matching.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import httpx
from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

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

#: The oldest Qdrant server that serves every request this adapter sends: DBSF fusion (``FusionQuery``) and the
#: tenant keyword index (``is_tenant``) arrived in v1.11.0, prefetches and the sparse IDF modifier in v1.10.0.
#: (The parametrized ``RrfQuery`` sent before needed v1.16.0.) docker-compose.yml pins an image at least this
#: new (a test checks).
MIN_SERVER_VERSION = (1, 11, 0)


@asynccontextmanager
async def _unavailable_on_transport_errors(what: str) -> AsyncIterator[None]:
    try:
        yield
    except UnexpectedResponse as exc:
        if exc.status_code is not None and exc.status_code >= 500:
            raise VectorIndexUnavailable(f"qdrant {what}: {exc.status_code}") from exc
        raise
    except (ResponseHandlingException, httpx.TransportError, ConnectionError, TimeoutError) as exc:
        raise VectorIndexUnavailable(f"qdrant {what}: {exc}") from exc


class QdrantServerIndex:
    """``VectorIndex`` on one collection of a Qdrant server. The client is owned (closed) by this object."""

    def __init__(self, client: AsyncQdrantClient, collection: str) -> None:
        self._client = client
        self._collection = collection
        self._has_sparse = True  # False for a collection created before the lexical vector existed

    async def ensure_collection(self, dimensions: int) -> None:
        async with _unavailable_on_transport_errors("ensure_collection"):
            if not await self._client.collection_exists(self._collection):
                await self._client.create_collection(
                    self._collection,
                    vectors_config={VECTOR_NAME: models.VectorParams(size=dimensions, distance=models.Distance.COSINE)},
                    sparse_vectors_config={SPARSE_NAME: models.SparseVectorParams(modifier=models.Modifier.IDF)},
                )
            info = await self._client.get_collection(self._collection)
            self._has_sparse = SPARSE_NAME in (info.config.params.sparse_vectors or {})
            if not self._has_sparse:
                log.warning(
                    "qdrant collection %s has no %r vector: hybrid search falls back to dense; "
                    "recreate it and mnemo replay for lexical matching",
                    self._collection,
                    SPARSE_NAME,
                )
            for name, kind in payload_indexes().items():
                # Idempotent on a server; a no-op with a warning in local mode.
                await self._client.create_payload_index(self._collection, name, field_schema=_INDEX_SCHEMA[kind])

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        if not points:
            return
        structs = [
            models.PointStruct(id=point_id(p.id), vector=self._vectors(p), payload=dict(p.payload)) for p in points
        ]
        async with _unavailable_on_transport_errors("upsert"):
            await self._client.upsert(self._collection, points=structs, wait=True)

    def _vectors(self, p: VectorPoint) -> dict[str, Any]:
        vectors: dict[str, Any] = {VECTOR_NAME: [float(x) for x in p.vector]}
        if p.sparse and self._has_sparse:
            vectors[SPARSE_NAME] = models.SparseVector(
                indices=list(p.sparse.indices), values=[float(x) for x in p.sparse.values]
            )
        return vectors

    async def search(self, query: VectorQuery) -> list[ScoredPoint]:
        async with _unavailable_on_transport_errors("search"):
            response = await self._client.query_points(
                self._collection,
                query=[float(x) for x in query.vector],
                using=VECTOR_NAME,
                query_filter=to_qdrant_filter(query.flt),
                limit=query.limit,
                score_threshold=query.score_threshold,
                with_payload=True,
                with_vectors=False,
            )
        return [ScoredPoint(str(p.id), float(p.score), payload_of(p.payload)) for p in response.points]

    async def hybrid_search(self, query: VectorQuery) -> list[ScoredPoint]:
        """DBSF of the dense and the lexical prefetch, both filtered (see the port)."""
        return (await self.hybrid_search_many([query]))[0]

    async def hybrid_search_many(self, queries: Sequence[VectorQuery]) -> list[list[ScoredPoint]]:
        """The queries in one ``query_batch_points`` call: one round trip to the server."""
        if not queries:
            return []
        async with _unavailable_on_transport_errors("hybrid_search"):
            responses = await self._client.query_batch_points(
                self._collection, requests=[self._hybrid_request(q) for q in queries]
            )
        return [[ScoredPoint(str(p.id), float(p.score), payload_of(p.payload)) for p in r.points] for r in responses]

    def _hybrid_request(self, query: VectorQuery) -> models.QueryRequest:
        """The query's DBSF request, or its dense one on a collection without the lexical vector."""
        qdrant_filter = to_qdrant_filter(query.flt)
        limit, sparse = query.limit, query.sparse
        dense = [float(x) for x in query.vector]
        if not self._has_sparse:
            return models.QueryRequest(
                query=dense,
                using=VECTOR_NAME,
                filter=qdrant_filter,
                limit=limit,
                score_threshold=query.score_threshold,
                with_payload=True,
                with_vector=False,
            )
        prefetch = [
            models.Prefetch(
                query=dense, using=VECTOR_NAME, filter=qdrant_filter, limit=limit, score_threshold=query.score_threshold
            )
        ]
        if sparse:
            lexical = models.SparseVector(indices=list(sparse.indices), values=[float(x) for x in sparse.values])
            prefetch.append(models.Prefetch(query=lexical, using=SPARSE_NAME, filter=qdrant_filter, limit=limit))
        # No filter on the fusion: every prefetch carries it, and Qdrant would AND a top-level one into each
        # prefetch again (as Qdrant Edge does: ``edge.py``, ``_hybrid_request``).
        return models.QueryRequest(
            prefetch=prefetch,
            query=models.FusionQuery(fusion=models.Fusion.DBSF),
            limit=limit,
            with_payload=True,
            with_vector=False,
        )

    async def delete(self, flt: VectorFilter) -> None:
        """Delete the points matching ``flt``; an empty filter is refused rather than wiping the index."""
        qdrant_filter = to_qdrant_filter(flt)
        if qdrant_filter is None:
            raise ValueError("delete needs at least one condition")
        selector = models.FilterSelector(filter=qdrant_filter)
        async with _unavailable_on_transport_errors("delete"):
            await self._client.delete(self._collection, points_selector=selector, wait=True)

    async def delete_ids(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        selector = models.PointIdsList(points=[point_id(i) for i in ids])
        async with _unavailable_on_transport_errors("delete_ids"):
            await self._client.delete(self._collection, points_selector=selector, wait=True)

    async def count(self, flt: VectorFilter | None = None) -> int:
        async with _unavailable_on_transport_errors("count"):
            result = await self._client.count(
                self._collection, count_filter=to_qdrant_filter(flt) if flt else None, exact=True
            )
        return int(result.count)

    async def retrieve(self, ids: Sequence[str]) -> list[ScoredPoint]:
        if not ids:
            return []
        async with _unavailable_on_transport_errors("retrieve"):
            records = await self._client.retrieve(
                self._collection, ids=[point_id(i) for i in ids], with_payload=True, with_vectors=False
            )
        return [ScoredPoint(str(r.id), 0.0, payload_of(r.payload)) for r in records]

    async def close(self) -> None:
        await self._client.close()


_INDEX_SCHEMA: dict[IndexKind, Any] = {
    "tenant": models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True),
    "keyword": models.PayloadSchemaType.KEYWORD,
    "float": models.PayloadSchemaType.FLOAT,
    "integer": models.PayloadSchemaType.INTEGER,
}


class _ClientConditions:
    """The filter conditions of qdrant-client's models (``engine.FilterBuilder``)."""

    def equals(self, key: str, value: str | int) -> models.Condition:
        return models.FieldCondition(key=key, match=models.MatchValue(value=value))

    def any_of(self, key: str, values: list[str] | list[int]) -> models.Condition:
        return models.FieldCondition(key=key, match=models.MatchAny(any=values))

    def within(self, key: str, gte: float | None, lte: float | None) -> models.Condition:
        return models.FieldCondition(key=key, range=models.Range(gte=gte, lte=lte))

    def one_of(self, conditions: list[models.Condition]) -> models.Condition:
        return models.Filter(should=conditions)


def to_qdrant_filter(flt: VectorFilter) -> models.Filter | None:
    """Translate the port's filter; ``None`` when it has no conditions (matches every point)."""
    conditions = translate(flt, _ClientConditions())
    if conditions is None:
        return None
    must, must_not = conditions
    return models.Filter(must=must or None, must_not=must_not or None)
