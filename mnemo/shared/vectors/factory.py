"""Choose the vector index for this process from the settings; call once per process and share the result.

- ``qdrant_url`` set: ``QdrantServerIndex``, whatever the mode and the role (every process talks to the server).
- ``vectors.mode=local`` (default): ``EdgeVectorIndex`` under ``data_dir/qdrant-edge``. Qdrant Edge allows one
  open handle per shard directory, so the writer and the readers share this process (the one-process stack).
- ``vectors.mode=stream`` (``mnemo/shared/vectors/stream.py``): the ``write`` role (the embedding service, ``mnemo
  replay``) gets a ``StreamPointWriter`` and no shard; the ``read`` and ``both`` roles get a ``FollowedIndex``:
  a shard of their own under ``data_dir/points-replica`` fed by a ``PointsFollower`` (writes, if any, still go
  to the stream), returned once the shard has caught up with the stream (``vectors.start_catch_up_s``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from nats.aio.client import Client as NatsClient
from qdrant_client import AsyncQdrantClient

from mnemo.shared.settings import Settings
from mnemo.shared.vectors.edge import EdgeVectorIndex
from mnemo.shared.vectors.follower import FollowedIndex, PointsFollower
from mnemo.shared.vectors.port import VectorIndex
from mnemo.shared.vectors.qdrant_server import QdrantServerIndex
from mnemo.shared.vectors.stream import StreamPointWriter

log = logging.getLogger(__name__)

#: What a process does with the index: ``write`` (embedding), ``read`` (context-assembler) or ``both``.
VectorRole = Literal["write", "read", "both"]
#: Where a stream-mode reader keeps its shard and its applied sequence, under ``data_dir``.
REPLICA_DIR = "points-replica"


def build_vector_index(settings: Settings) -> VectorIndex:
    """``qdrant_url`` set → ``QdrantServerIndex``; unset → ``EdgeVectorIndex`` under ``data_dir/qdrant-edge``."""
    if settings.qdrant_url:
        api_key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
        client = AsyncQdrantClient(url=settings.qdrant_url, api_key=api_key)
        return QdrantServerIndex(client, settings.vector_collection)
    return EdgeVectorIndex(
        settings.data_dir / "qdrant-edge",
        settings.vector_collection,
        search_threads=settings.vectors.search_threads,
    )


@dataclass
class OpenedIndex:
    index: VectorIndex
    follower: PointsFollower | None = None  # stream mode, read and both roles: what read-your-writes waits on


async def open_vector_index(settings: Settings, nc: NatsClient, role: VectorRole) -> OpenedIndex:
    """The index for ``role`` (see the module docstring), its collection ensured and its follower started."""
    dimensions = settings.embedder.dimensions
    if settings.qdrant_url or settings.vectors.mode == "local":
        index = build_vector_index(settings)
        await index.ensure_collection(dimensions)
        return OpenedIndex(index)
    writer = StreamPointWriter(nc, streams=settings.streams, publish_timeout_s=settings.vectors.publish_timeout_s)
    if role == "write":
        await writer.ensure_collection(dimensions)
        return OpenedIndex(writer)
    follower = PointsFollower(
        nc,
        settings.data_dir / REPLICA_DIR,
        settings.vector_collection,
        dimensions,
        streams=settings.streams,
        search_threads=settings.vectors.search_threads,
    )
    followed = FollowedIndex(writer, follower)
    await followed.ensure_collection(dimensions)
    # A replica takes requests once its shard holds what the stream held at its start (a new or wiped shard
    # re-reads the stream: no model call), so it does not answer its share of them with a lagging index.
    if not await follower.caught_up(settings.vectors.start_catch_up_s):
        log.warning(
            "points follower at sequence %d of %d after %.0f s: serving while it catches up",
            follower.applied,
            await follower.last_sequence(),
            settings.vectors.start_catch_up_s,
        )
    return OpenedIndex(followed, follower)
