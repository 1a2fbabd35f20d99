"""Stream mode for tests: a ``VectorIndex`` that writes through the points stream and reads a follower's shard.

Reads wait for the follower to reach the stream's last sequence first (the read-your-writes rule of
``shared/vectors/follower.py``), so the contract suite can run on the writer + follower pair unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

import nats
from nats.aio.client import Client as NatsClient
from nats.js.errors import NotFoundError

from shared import subjects
from shared.vectors.follower import PointsFollower
from shared.vectors.port import ScoredPoint, SparseVector, VectorFilter, VectorPoint
from shared.vectors.stream import StreamPointWriter

CATCH_UP_S = 10.0


async def fresh_points_stream(nc: NatsClient) -> None:
    """Delete MNEMO_POINTS, so a test starts on an empty stream (the session shares one nats-server)."""
    with contextlib.suppress(NotFoundError):
        await nc.jetstream().delete_stream(subjects.POINTS_STREAM)


class StreamedIndex:
    """Writes: ``StreamPointWriter``; reads: the follower's shard once it has applied every acked write."""

    def __init__(self, nc: NatsClient, root: Path, collection: str, *, own_connection: bool = False) -> None:
        self.nc = nc
        self.writer = StreamPointWriter(nc)
        self.root = root
        self.collection = collection
        self.follower: PointsFollower | None = None
        self._own = own_connection

    @classmethod
    async def connect(cls, nats_url: str, root: Path, collection: str) -> StreamedIndex:
        nc = await nats.connect(nats_url)
        await fresh_points_stream(nc)
        return cls(nc, root, collection, own_connection=True)

    async def _reader(self) -> PointsFollower:
        assert self.follower is not None, "ensure_collection first"
        assert await self.follower.caught_up(CATCH_UP_S), "the follower did not catch up"
        return self.follower

    async def ensure_collection(self, dimensions: int) -> None:
        await self.writer.ensure_collection(dimensions)
        if self.follower is None:
            self.follower = PointsFollower(self.nc, self.root, self.collection, dimensions, retry_s=0.1)
            await self.follower.start()

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        await self.writer.upsert(points)

    async def delete(self, flt: VectorFilter) -> None:
        await self.writer.delete(flt)

    async def delete_ids(self, ids: Sequence[str]) -> None:
        await self.writer.delete_ids(ids)

    async def search(
        self, vector: Sequence[float], flt: VectorFilter, limit: int, score_threshold: float | None = None
    ) -> list[ScoredPoint]:
        return await (await self._reader()).index.search(vector, flt, limit, score_threshold)

    async def hybrid_search(
        self,
        vector: Sequence[float],
        sparse: SparseVector,
        flt: VectorFilter,
        limit: int,
        score_threshold: float | None = None,
    ) -> list[ScoredPoint]:
        return await (await self._reader()).index.hybrid_search(vector, sparse, flt, limit, score_threshold)

    async def count(self, flt: VectorFilter | None = None) -> int:
        return await (await self._reader()).index.count(flt)

    async def retrieve(self, ids: Sequence[str]) -> list[ScoredPoint]:
        return await (await self._reader()).index.retrieve(ids)

    async def close(self) -> None:
        if self.follower is not None:
            await self.follower.stop()
            self.follower = None
        await self.writer.close()
        if self._own:
            await self.nc.close()
