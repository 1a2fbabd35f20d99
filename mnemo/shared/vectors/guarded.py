"""``VectorIndex`` views that pass each call on to another index, the port's methods stated once.

A view decides only where a call goes: ``ForwardedReads`` sends the searches, count and retrieve to the index
its ``reader()`` answers, ``ForwardedWrites`` the ensure, upsert and deletes to its ``writer()``. The fault
switch (``context_assembler/faults.py``) and the tests' read-your-writes wait (``tests/vector_stream.py``) check
something first (``GuardedIndex``), a stream-mode reader writes to the points stream and reads its follower's
shard (``follower.FollowedIndex``), and the points stream writer refuses reads (``stream.StreamPointWriter``);
a method added to the port is forwarded here, in one place.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.shared.vectors.port import ScoredPoint, VectorFilter, VectorIndex, VectorPoint, VectorQuery


class ForwardedReads:
    """The port's read calls, each passed on to the index ``reader()`` answers (raising refuses the call)."""

    async def reader(self) -> VectorIndex:
        raise NotImplementedError

    async def search(self, query: VectorQuery) -> list[ScoredPoint]:
        return await (await self.reader()).search(query)

    async def hybrid_search(self, query: VectorQuery) -> list[ScoredPoint]:
        return await (await self.reader()).hybrid_search(query)

    async def hybrid_search_many(self, queries: Sequence[VectorQuery]) -> list[list[ScoredPoint]]:
        return await (await self.reader()).hybrid_search_many(queries)

    async def count(self, flt: VectorFilter | None = None) -> int:
        return await (await self.reader()).count(flt)

    async def retrieve(self, ids: Sequence[str]) -> list[ScoredPoint]:
        return await (await self.reader()).retrieve(ids)


class ForwardedWrites:
    """The port's write calls, each passed on to the index ``writer()`` answers (raising refuses the call)."""

    async def writer(self) -> VectorIndex:
        raise NotImplementedError

    async def ensure_collection(self, dimensions: int) -> None:
        await (await self.writer()).ensure_collection(dimensions)

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        await (await self.writer()).upsert(points)

    async def delete(self, flt: VectorFilter) -> None:
        await (await self.writer()).delete(flt)

    async def delete_ids(self, ids: Sequence[str]) -> None:
        await (await self.writer()).delete_ids(ids)


class GuardedIndex(ForwardedReads, ForwardedWrites):
    """Forwards every ``VectorIndex`` call to ``inner`` after ``before_write`` (ensure, upsert, deletes) or
    ``before_read`` (searches, count, retrieve); both do nothing unless a subclass says otherwise."""

    def __init__(self, inner: VectorIndex) -> None:
        self.inner = inner

    async def before_write(self) -> None:
        """Awaited before each call that changes the index; raising refuses the call."""

    async def before_read(self) -> None:
        """Awaited before each call that reads the index; raising refuses the call."""

    async def writer(self) -> VectorIndex:
        await self.before_write()
        return self.inner

    async def reader(self) -> VectorIndex:
        await self.before_read()
        return self.inner

    async def close(self) -> None:
        await self.inner.close()
