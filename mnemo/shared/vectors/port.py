"""The vector index port: points with a dense vector and a payload of ids and filter fields.

Payloads carry ids and filter fields only, never user text (text stays encrypted in MongoDB).
Filters are applied inside the vector query, never after it, so a tenant's query cannot even rank
another tenant's points. Every adapter passes ``tests/contract/test_vector_index_contract.py``.
Point ids are UUID strings; callers derive them deterministically so redelivered upserts are idempotent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

Scalar = str | int | float | bool
PayloadValue = Scalar | list[str] | None


#: Name of the sparse (lexical) vector of every collection; the engine applies IDF to it.
SPARSE_NAME = "lexical"
# The index schema both adapters create, so either engine holds the same collection shape.
VECTOR_NAME = "dense"
#: The tenant field: a keyword index with ``is_tenant`` so the engine co-locates each tenant's points.
TENANT_FIELD = "tenant_id"
#: Other keyword fields that filters use (``bot_ids``, ``audience`` and ``applies_to`` are lists; a match means
#: "contains"). ``audience`` is who may be shown the point (``mnemo/shared/presence.py``). Every field a filter
#: names has an index (``tests/unit/test_vector_payload_indexes.py``): without one the engine reads the payload
#: of every point the other conditions leave.
KEYWORD_FIELDS = (
    "user_id",
    "conversation_id",
    "kind",
    "bot_ids",
    "persona_id",
    "message_id",
    "audience",
    "applies_to",
    "scope",
    "fact_id",
    "summary_id",
    "legacy_id",
    "lorebook_id",
    "document_id",
    "chunk_hash",
    "model",
    "analyzer",
    "memory_id",
    "namespace",
    "memory_type",
    "tags",
)
#: Integer fields matched by value (a lore entry's ``uid`` in its book).
INTEGER_FIELDS = ("uid",)
#: Numeric fields for ranges; times are epoch seconds as floats.
FLOAT_FIELDS = ("created_at",)


@dataclass(frozen=True)
class SparseVector:
    """Parallel lists: ``indices`` are distinct term ids (unsigned 32-bit), ``values`` their weights.

    Built by ``mnemo/shared/sparse.py``; empty (falsy) when the text has no words.
    """

    indices: list[int]
    values: list[float]

    def __bool__(self) -> bool:
        return bool(self.indices)


@dataclass(frozen=True)
class VectorPoint:
    """A point; ``sparse`` is its lexical vector (``None`` or empty: the point has none, dense only)."""

    id: str
    vector: Sequence[float]
    payload: Mapping[str, PayloadValue]
    sparse: SparseVector | None = None


@dataclass(frozen=True)
class Match:
    """``key`` equals one of ``values`` (for a list field: contains one of them)."""

    key: str
    values: tuple[str | int, ...]

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError(f"Match on {self.key!r} needs at least one value")
        if any(isinstance(v, bool) for v in self.values):
            # qdrant-edge 0.9 turns MatchValue(True) into the integer 1, which never matches a stored boolean;
            # refusing booleans here keeps every adapter's contract the same. Store flags as keywords.
            raise TypeError(f"Match on {self.key!r}: boolean values are not supported, use a keyword")


@dataclass(frozen=True)
class Range:
    """Numeric range on ``key`` (inclusive bounds; ``None`` is open)."""

    key: str
    gte: float | None = None
    lte: float | None = None


@dataclass(frozen=True)
class VectorFilter:
    must: tuple[Match | Range, ...] = ()
    must_not: tuple[Match, ...] = ()

    @classmethod
    def where(cls, **equals: str | int) -> VectorFilter:
        return cls(must=tuple(Match(k, (v,)) for k, v in equals.items()))

    def and_(self, *conditions: Match | Range) -> VectorFilter:
        return VectorFilter(self.must + conditions, self.must_not)


@dataclass(frozen=True)
class VectorQuery:
    """One search: the dense and the lexical query, the filter (inside the query: both prefetches of a hybrid
    search carry it), how many points (each prefetch's candidates) and the lowest cosine the dense side lets in.
    ``VectorIndex.search`` reads the dense part only; ``VectorQuery.dense`` builds a query without words."""

    vector: Sequence[float]
    sparse: SparseVector
    flt: VectorFilter
    limit: int
    score_threshold: float | None = None

    @classmethod
    def dense(
        cls, vector: Sequence[float], flt: VectorFilter, limit: int, score_threshold: float | None = None
    ) -> VectorQuery:
        return cls(vector, SparseVector([], []), flt, limit, score_threshold)


@dataclass(frozen=True)
class ScoredPoint:
    id: str
    score: float
    payload: dict[str, PayloadValue] = field(default_factory=dict)


class VectorIndexUnavailable(Exception):
    """The index cannot be reached; callers degrade instead of failing."""


class VectorIndex(Protocol):
    async def ensure_collection(self, dimensions: int) -> None:
        """Create the collection and its payload indexes if absent (idempotent)."""
        ...

    async def upsert(self, points: Sequence[VectorPoint]) -> None: ...

    async def search(self, query: VectorQuery) -> list[ScoredPoint]:
        """Cosine similarity to ``query.vector``, best first, only among points matching ``query.flt``, at most
        ``query.limit``, none under ``query.score_threshold``; ``query.sparse`` is not read."""
        ...

    async def hybrid_search(self, query: VectorQuery) -> list[ScoredPoint]:
        """Distribution-based score fusion (the engine's DBSF) of a dense (cosine) and a sparse (lexical, IDF)
        prefetch, best first.

        Both prefetches carry ``query.flt`` inside the query, so fusion only ever ranks matching points. Each
        prefetch fetches ``query.limit`` candidates; each list's scores are scaled by its own mean +/- 3 standard
        deviations and a point's scaled scores are summed (a list it is not in adds nothing). Why scores
        rather than ranks (reciprocal rank fusion, used before): when the lexical side only matches a name
        that a dozen turns share, its scores are nearly flat and its ranks arbitrary; RRF let those ranks push
        a turn the dense side ranks first out of the top 10, DBSF lets the flat list weigh little. Measured on
        the REALTALK and multilingual sets (docs/benchmarks.md, Retrieval levers). Scores are fusion scores, NOT cosines:
        ``query.score_threshold`` applies to the dense prefetch only (a weak cosine does not enter through the dense
        side; a lexical match still can). An empty ``query.sparse`` degrades to a dense-only fusion (same order as
        ``search``); :func:`ranked` asks for the dense search instead, cosines and all.
        """
        ...

    async def hybrid_search_many(self, queries: Sequence[VectorQuery]) -> list[list[ScoredPoint]]:
        """:meth:`hybrid_search` of each query, in order, in one call: the engine plans them as one batch (Qdrant
        Edge's ``query_batch``: one pass over the segments; a server's ``query_batch_points``: one round trip).
        A context request makes three such searches with the same vectors and different filters at once."""
        ...

    async def delete(self, flt: VectorFilter) -> None:
        """Delete the points matching ``flt``; an empty filter raises ValueError rather than wiping the index."""
        ...

    async def delete_ids(self, ids: Sequence[str]) -> None: ...

    async def count(self, flt: VectorFilter | None = None) -> int: ...

    async def retrieve(self, ids: Sequence[str]) -> list[ScoredPoint]:
        """Payloads of the given points (score 0); missing ids are left out."""
        ...

    async def close(self) -> None: ...


async def ranked(index: VectorIndex, query: VectorQuery) -> list[ScoredPoint]:
    """The candidates of ``query``, best first: fused (DBSF scores) when it has words, else dense (cosines),
    so that a query without words keeps the dense search's cosines and its threshold."""
    return await (index.hybrid_search(query) if query.sparse else index.search(query))
