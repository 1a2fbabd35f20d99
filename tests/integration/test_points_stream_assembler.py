"""Read-your-writes of stream mode through the context-assembler (real nats-server, bundled model).

The embedding handler writes through a ``StreamPointWriter`` on its own connection (the embedding process);
the assembler reads a ``FollowedIndex``: its own shard, fed by a follower that is made slow here. A request
sent once the embedding batch returned (the moment its log events are acked) finds the new message by meaning
without ``vector_index_lag``; with a wait shorter than the follower's lag, the reply still comes and says
``vector_index_lag``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nats
import pytest

from mnemo.services.ingest.handlers import decode_command
from mnemo.shared import subjects
from mnemo.shared.settings import Settings, VectorsSettings
from mnemo.shared.vectors.follower import FollowedIndex, PointsFollower
from mnemo.shared.vectors.stream import StreamPointWriter
from tests.components import DRAGON, FILLER, Rpc, deps, items, published, retrieval_chain
from tests.vector_stream import fresh_points_stream

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
T, U, C = "t1", "u1", "c1"
FOLLOWER_LAG_S = 1.0


def created(i: int, content: str) -> bytes:
    return json.dumps({
        "tenant_id": T, "user_id": U, "conversation_id": C, "message_id": f"m{i}", "role": "user",
        "author_name": "Mira", "content": content, "created_at": (T0 + timedelta(minutes=i)).isoformat(),
        "bot_ids": ["ada"],
    }).encode()  # fmt: skip


REQUEST = {"tenant_id": T, "user_id": U, "conversation_id": C, "bot_id": "ada",
           "user_message": "Where does the dragon sleep?", "max_tokens": 3000}  # fmt: skip


async def chain(nats_url: str, tmp_path: Path, embedder: Any, read_wait_ms: int) -> AsyncIterator[Any]:
    writer_nc, reader_nc = await nats.connect(nats_url), await nats.connect(nats_url)
    await fresh_points_stream(writer_nc)
    writer = StreamPointWriter(writer_nc)
    await writer.ensure_collection(embedder.dimensions)
    follower = PointsFollower(reader_nc, tmp_path / "replica", "vectors", embedder.dimensions, retry_s=0.1)
    index = FollowedIndex(StreamPointWriter(reader_nc), follower)
    await index.ensure_collection(embedder.dimensions)
    applied = follower.index.upsert

    async def slow(points: Any) -> None:  # a replica behind the writer by about FOLLOWER_LAG_S
        await asyncio.sleep(FOLLOWER_LAG_S)
        await applied(points)

    follower.index.upsert = slow  # type: ignore[method-assign]
    try:
        d = deps(vectors=index, embedder=embedder, vectors_caught_up=follower.caught_up)
        d.settings = Settings(vectors=VectorsSettings(read_wait_ms=read_wait_ms))
        async with retrieval_chain(d, writer, embedder, history_limit=2) as (ingest, embedding, broker):
            commands = [
                decode_command(subjects.BOT_UPSERTED, json.dumps({"tenant_id": T, "bot_id": "ada", "name": "Ada",
                               "updated_at": T0.isoformat()}).encode()),
                *(decode_command(subjects.MESSAGE_CREATED, created(i, text))
                  for i, text in enumerate([DRAGON, *FILLER[:6]])),
            ]  # fmt: skip
            assert await ingest.on_chat_batch(items(commands)) == []
            # The embedding batch: its log events are acked once this returns (every PubAck awaited).
            assert await embedding.on_log_batch(items(published(d).take())) == []
            yield Rpc(broker), follower
    finally:
        await index.close()
        await writer_nc.close()
        await reader_nc.close()


@pytest.fixture
async def patient(nats_url: str, tmp_path: Path, embedder: Any) -> AsyncIterator[Any]:
    async for c in chain(nats_url, tmp_path, embedder, read_wait_ms=int(FOLLOWER_LAG_S * 1000 * 10)):
        yield c


@pytest.fixture
async def hasty(nats_url: str, tmp_path: Path, embedder: Any) -> AsyncIterator[Any]:
    async for c in chain(nats_url, tmp_path, embedder, read_wait_ms=50):
        yield c


async def test_a_request_after_the_embedding_ack_sees_its_points(patient: Any) -> None:
    rpc, _ = patient
    reply = await rpc(subjects.CONTEXT_ASSEMBLE, REQUEST)
    assert "error" not in reply
    assert reply["degraded"] == []
    assert DRAGON in reply["context"]  # retrieved by meaning from the replica's shard, not from the history


async def test_a_lagging_replica_answers_and_names_the_lag(hasty: Any) -> None:
    rpc, follower = hasty
    reply = await rpc(subjects.CONTEXT_ASSEMBLE, REQUEST)
    assert "error" not in reply
    assert "vector_index_lag" in reply["degraded"]
    assert await follower.caught_up(30)
    again = await rpc(subjects.CONTEXT_ASSEMBLE, REQUEST)
    assert again["degraded"] == []
    assert DRAGON in again["context"]
