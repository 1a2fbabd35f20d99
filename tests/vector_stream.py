"""Stream mode for tests: a ``VectorIndex`` that writes through the points stream and reads a follower's shard.

Reads wait for the follower to reach the stream's last sequence first (the read-your-writes rule of
``mnemo/shared/vectors/follower.py``), so the contract suite can run on the writer + follower pair unchanged.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import nats
from nats.aio.client import Client as NatsClient
from nats.js.errors import NotFoundError

from mnemo.shared import subjects
from mnemo.shared.vectors.follower import FollowedIndex, PointsFollower
from mnemo.shared.vectors.guarded import GuardedIndex
from mnemo.shared.vectors.stream import StreamPointWriter

CATCH_UP_S = 10.0


async def fresh_points_stream(nc: NatsClient) -> None:
    """Delete MNEMO_POINTS, so a test starts on an empty stream (the session shares one nats-server)."""
    with contextlib.suppress(NotFoundError):
        await nc.jetstream().delete_stream(subjects.POINTS_STREAM)


class StreamedIndex(GuardedIndex):
    """A ``FollowedIndex`` whose every read first waits for the follower to apply every acked write."""

    def __init__(self, nc: NatsClient, root: Path, collection: str, dimensions: int) -> None:
        self.follower = PointsFollower(nc, root, collection, dimensions, retry_s=0.1)
        super().__init__(FollowedIndex(StreamPointWriter(nc), self.follower))
        self.nc = nc

    @classmethod
    async def connect(cls, nats_url: str, root: Path, collection: str, dimensions: int) -> StreamedIndex:
        nc = await nats.connect(nats_url)
        await fresh_points_stream(nc)
        return cls(nc, root, collection, dimensions)

    async def before_read(self) -> None:
        assert await self.follower.caught_up(CATCH_UP_S), "the follower did not catch up"

    async def close(self) -> None:
        await super().close()
        await self.nc.close()
