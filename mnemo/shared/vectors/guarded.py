"""A view of a ``VectorIndex`` that runs a check before passing each call on to the index it wraps.

A fault switch (``context_assembler/faults.py``) and the tests' read-your-writes wait (``tests/vector_stream.py``)
differ only in what they do before a call; this class states the port's methods once for both, so a method added
to the port is forwarded in one place.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.shared.vectors.port import ScoredPoint, SparseVector, VectorFilter, VectorIndex, VectorPoint


class GuardedIndex:
    """Forwards every ``VectorIndex`` call to ``inner`` after ``before_write`` (ensure, upsert, deletes) or
    ``before_read`` (searches, count, retrieve); both do nothing unless a subclass says otherwise."""

    def __init__(self, inner: VectorIndex) -> None:
        self.inner = inner

    async def before_write(self) -> None:
        """Awaited before each call that changes the index; raising refuses the call."""

    async def before_read(self) -> None:
        """Awaited before each call that reads the index; raising refuses the call."""

    async def ensure_collection(self, dimensions: int) -> None:
        await self.before_write()
        await self.inner.ensure_collection(dimensions)

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        await self.before_write()
        await self.inner.upsert(points)

    async def delete(self, flt: VectorFilter) -> None:
        await self.before_write()
        await self.inner.delete(flt)

    async def delete_ids(self, ids: Sequence[str]) -> None:
        await self.before_write()
        await self.inner.delete_ids(ids)

    async def search(
        self, vector: Sequence[float], flt: VectorFilter, limit: int, score_threshold: float | None = None
    ) -> list[ScoredPoint]:
        await self.before_read()
        return await self.inner.search(vector, flt, limit, score_threshold)

    async def hybrid_search(
        self,
        vector: Sequence[float],
        sparse: SparseVector,
        flt: VectorFilter,
        limit: int,
        score_threshold: float | None = None,
    ) -> list[ScoredPoint]:
        await self.before_read()
        return await self.inner.hybrid_search(vector, sparse, flt, limit, score_threshold)

    async def count(self, flt: VectorFilter | None = None) -> int:
        await self.before_read()
        return await self.inner.count(flt)

    async def retrieve(self, ids: Sequence[str]) -> list[ScoredPoint]:
        await self.before_read()
        return await self.inner.retrieve(ids)

    async def close(self) -> None:
        await self.inner.close()
