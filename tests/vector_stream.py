"""Stream mode for tests: a ``VectorIndex`` that writes through the points stream and reads a follower's shard.

Reads wait for the follower to reach the stream's last sequence first (the read-your-writes rule of
``mnemo/shared/vectors/follower.py``), so the contract suite can run on the writer + follower pair unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

import nats
from nats.aio.client import Client as NatsClient
from nats.js.errors import NotFoundError

from mnemo.shared import subjects
from mnemo.shared.vectors.follower import FollowedIndex, PointsFollower
from mnemo.shared.vectors.port import ScoredPoint, SparseVector, VectorFilter
from mnemo.shared.vectors.stream import StreamPointWriter

CATCH_UP_S = 10.0


async def fresh_points_stream(nc: NatsClient) -> None:
    """Delete MNEMO_POINTS, so a test starts on an empty stream (the session shares one nats-server)."""
    with contextlib.suppress(NotFoundError):
        await nc.jetstream().delete_stream(subjects.POINTS_STREAM)


class StreamedIndex(FollowedIndex):
    """``FollowedIndex`` whose every read first waits for the follower to apply every acked write."""

    def __init__(self, nc: NatsClient, root: Path, collection: str, dimensions: int) -> None:
        super().__init__(StreamPointWriter(nc), PointsFollower(nc, root, collection, dimensions, retry_s=0.1))
        self.nc = nc

    @classmethod
    async def connect(cls, nats_url: str, root: Path, collection: str, dimensions: int) -> StreamedIndex:
        nc = await nats.connect(nats_url)
        await fresh_points_stream(nc)
        return cls(nc, root, collection, dimensions)

    async def _caught_up(self) -> None:
        assert await self.follower.caught_up(CATCH_UP_S), "the follower did not catch up"

    async def search(
        self, vector: Sequence[float], flt: VectorFilter, limit: int, score_threshold: float | None = None
    ) -> list[ScoredPoint]:
        await self._caught_up()
        return await super().search(vector, flt, limit, score_threshold)

    async def hybrid_search(
        self,
        vector: Sequence[float],
        sparse: SparseVector,
        flt: VectorFilter,
        limit: int,
        score_threshold: float | None = None,
    ) -> list[ScoredPoint]:
        await self._caught_up()
        return await super().hybrid_search(vector, sparse, flt, limit, score_threshold)

    async def count(self, flt: VectorFilter | None = None) -> int:
        await self._caught_up()
        return await super().count(flt)

    async def retrieve(self, ids: Sequence[str]) -> list[ScoredPoint]:
        await self._caught_up()
        return await super().retrieve(ids)

    async def close(self) -> None:
        await super().close()
        await self.nc.close()
