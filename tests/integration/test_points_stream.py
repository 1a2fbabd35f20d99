"""Stream mode of the vector index on a real nats-server: one writer, followers with shards of their own.

Two followers converge on the same points through upserts, an edit (deletion by filter, then fewer chunks),
a deletion and tombstones; one restarts and resumes after its last applied sequence, one loses its directory
and rebuilds from the stream alone (no embedder anywhere on the reader side: the vectors are in the stream);
``mnemo replay``'s reset wipes every follower. Read-your-writes: once the writer returned (PubAcks awaited),
``caught_up`` returns only when the follower's shard serves the write.
"""

from __future__ import annotations

import asyncio
import math
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client as NatsClient

from mnemo.shared import subjects
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.follower import PointsFollower
from mnemo.shared.vectors.port import VectorFilter, VectorPoint, VectorQuery
from mnemo.shared.vectors.stream import StreamPointWriter
from tests.vector_stream import fresh_points_stream
from tests.waiting import wait_until

DIM = 8
T, U, C = "t1", "u1", "c1"
WAIT_S = 10.0


def unit(i: int) -> list[float]:
    v = [0.1] * DIM
    v[i % DIM] = 1.0
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def chunks(message_id: str, n: int, start: int = 0) -> list[VectorPoint]:
    """``n`` chunk points of one message, as the embedding service writes them."""
    return [
        VectorPoint(
            vp.point_id(vp.MESSAGE, T, U, C, message_id, i),
            unit(start + i),
            {
                vp.TENANT_ID: T,
                vp.USER_ID: U,
                vp.CONVERSATION_ID: C,
                vp.KIND: vp.MESSAGE,
                vp.MESSAGE_ID: message_id,
                vp.CHUNK: i,
            },
        )
        for i in range(n)
    ]


@pytest.fixture
async def nc(nats_url: str) -> AsyncIterator[NatsClient]:
    client = await nats.connect(nats_url)
    await fresh_points_stream(client)
    yield client
    await client.close()


async def started(nc: NatsClient, root: Path) -> PointsFollower:
    follower = PointsFollower(nc, root, "mnemo", DIM, retry_s=0.1)
    await follower.start()
    return follower


async def snapshot(follower: PointsFollower) -> dict[str, dict[str, object]]:
    """Every point of the shard (id -> payload), once the follower has applied every acked write."""
    assert await follower.caught_up(WAIT_S)
    hits = await follower.index.search(VectorQuery.dense(unit(0), VectorFilter.where(tenant_id=T), limit=1000))
    return {h.id: h.payload for h in hits}


def ids(pts: list[VectorPoint]) -> set[str]:
    return {p.id for p in pts}


async def test_followers_converge_resume_and_rebuild_from_the_stream(nc: NatsClient, tmp_path: Path) -> None:
    writer = StreamPointWriter(nc)
    await writer.ensure_collection(DIM)
    a = await started(nc, tmp_path / "a")
    b = await started(nc, tmp_path / "b")
    try:
        m1, m2, m3 = chunks("m1", 3), chunks("m2", 2, 10), chunks("m3", 1, 20)
        await writer.upsert(m1 + m2 + m3)
        # m1 edited to a shorter text: the planner deletes the message's points, then upserts the new chunks.
        await writer.delete(vp.messages_by_id(T, U, C, ["m1"]))
        m1_edit = chunks("m1", 1, 5)
        await writer.upsert(m1_edit)
        await writer.delete(vp.messages_by_id(T, U, C, ["m2"]))  # m2 deleted
        await writer.delete_ids([m3[0].id])  # a tombstone
        expected = ids(m1_edit)
        got_a, got_b = await snapshot(a), await snapshot(b)
        assert set(got_a) == set(got_b) == expected
        assert got_a == got_b

        # A restart resumes after the last applied sequence (nothing re-read); writes made meanwhile arrive.
        applied = a.applied
        await a.stop()
        m4 = chunks("m4", 2, 30)
        await writer.upsert(m4)
        a = await started(nc, tmp_path / "a")
        assert a.applied == applied  # resumed, not replayed from the start
        expected |= ids(m4)
        assert set(await snapshot(a)) == set(await snapshot(b)) == expected

        # A lost directory: a new follower rebuilds from the stream alone, no embedder involved.
        await b.stop()
        shutil.rmtree(tmp_path / "b")
        b = await started(nc, tmp_path / "b")
        assert b.applied == 0
        assert await snapshot(b) == await snapshot(a)
        [best] = await b.index.search(VectorQuery.dense(m4[1].vector, VectorFilter.where(tenant_id=T), limit=1))
        assert best.id == m4[1].id
        assert best.score == pytest.approx(1.0, abs=1e-4)
    finally:
        await a.stop()
        await b.stop()


async def test_the_stream_keeps_one_message_per_point_and_per_deleted_source(nc: NatsClient, tmp_path: Path) -> None:
    writer = StreamPointWriter(nc)
    await writer.ensure_collection(DIM)
    m1 = chunks("m1", 3)
    for _ in range(3):  # redeliveries and edits rewrite the same point ids
        await writer.upsert(m1)
        await writer.delete(vp.messages_by_id(T, U, C, ["m1", "m2"]))  # split: one deletion per message
    await writer.upsert(m1)
    info = await nc.jetstream().stream_info(subjects.POINTS_STREAM)
    assert info.state.messages == 3 + 2  # the points' last upserts, one deletion per source
    follower = await started(nc, tmp_path / "f")
    try:
        assert set(await snapshot(follower)) == ids(m1)  # replayed compacted history == live history
    finally:
        await follower.stop()


async def test_replay_reset_wipes_every_follower(nc: NatsClient, tmp_path: Path) -> None:
    writer = StreamPointWriter(nc)
    await writer.ensure_collection(DIM)
    old, new = chunks("old", 2), chunks("new", 1, 3)
    await writer.upsert(old)
    live = await started(nc, tmp_path / "live")
    try:
        assert set(await snapshot(live)) == ids(old)
        marker = await writer.reset()
        await writer.upsert(new)
        info = await nc.jetstream().stream_info(subjects.POINTS_STREAM)
        assert info.state.first_seq == marker  # everything older was purged
        late = await started(nc, tmp_path / "late")
        try:
            assert set(await snapshot(live)) == set(await snapshot(late)) == ids(new)
        finally:
            await late.stop()
    finally:
        await live.stop()


async def test_read_your_writes_after_the_writer_returns(nc: NatsClient, tmp_path: Path) -> None:
    writer = StreamPointWriter(nc)
    await writer.ensure_collection(DIM)
    follower = await started(nc, tmp_path / "r")
    slow_upsert = follower.index.upsert

    async def slow(points: object) -> None:  # a follower well behind the writer
        await asyncio.sleep(0.5)
        await slow_upsert(points)  # type: ignore[arg-type]

    follower.index.upsert = slow  # type: ignore[method-assign]
    try:
        pts = chunks("m1", 2)
        await writer.upsert(pts)  # returns once the stream acked every point
        assert not await follower.caught_up(0.05)  # not applied yet: the wait says so
        assert await follower.caught_up(WAIT_S)
        assert {p.id for p in await follower.index.retrieve([p.id for p in pts])} == ids(pts)
    finally:
        await follower.stop()


async def test_a_follower_of_a_recreated_stream_rebuilds(nc: NatsClient, tmp_path: Path) -> None:
    writer = StreamPointWriter(nc)
    await writer.ensure_collection(DIM)
    first = chunks("m1", 2)
    await writer.upsert(first)
    follower = await started(nc, tmp_path / "f")
    assert set(await snapshot(follower)) == ids(first)
    await follower.stop()
    await fresh_points_stream(nc)  # another stream under the same name (e.g. a NATS server wiped)
    await writer.ensure_collection(DIM)
    second = chunks("m2", 1)
    await writer.upsert(second)
    follower = await started(nc, tmp_path / "f")
    try:
        assert follower.applied == 0
        assert set(await snapshot(follower)) == ids(second)
    finally:
        await follower.stop()


async def test_the_factory_gives_each_role_its_side(nc: NatsClient, tmp_path: Path) -> None:
    from mnemo.shared.settings import EmbedderSettings, Settings, VectorsSettings
    from mnemo.shared.vectors.edge import EdgeVectorIndex
    from mnemo.shared.vectors.factory import open_vector_index
    from mnemo.shared.vectors.follower import FollowedIndex
    from mnemo.shared.vectors.qdrant_server import QdrantServerIndex

    stream = Settings(
        data_dir=tmp_path,
        embedder=EmbedderSettings(dimensions=DIM),
        vectors=VectorsSettings(mode="stream", start_catch_up_s=WAIT_S),
    )
    writer = await open_vector_index(stream, nc, "write")
    await writer.index.upsert(chunks("m1", 3))
    assert isinstance(writer.index, StreamPointWriter)
    assert writer.follower is None
    assert not (tmp_path / "points-replica").exists()  # the writer owns no shard
    reader = await open_vector_index(stream, nc, "read")
    try:
        assert isinstance(reader.index, FollowedIndex)
        assert reader.follower is not None
        assert reader.follower.applied == await reader.follower.last_sequence()  # caught up before serving
        assert (tmp_path / "points-replica" / "mnemo").is_dir()
    finally:
        await reader.index.close()
    local = await open_vector_index(Settings(data_dir=tmp_path), nc, "read")
    assert isinstance(local.index, EdgeVectorIndex)
    await local.index.close()
    server = Settings(data_dir=tmp_path, qdrant_url="http://127.0.0.1:9", vectors=VectorsSettings(mode="stream"))
    from mnemo.shared.vectors.factory import build_vector_index

    remote = build_vector_index(server)
    assert isinstance(remote, QdrantServerIndex)  # a server wins over the mode
    await remote.close()


async def test_concurrent_requests_share_the_stream_lookups(nc: NatsClient, tmp_path: Path) -> None:
    writer = StreamPointWriter(nc)
    await writer.ensure_collection(DIM)
    follower = await started(nc, tmp_path / "f")
    calls = 0
    stream_info = follower._js.stream_info

    async def counted(name: str, *args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        return await stream_info(name, *args, **kwargs)  # type: ignore[arg-type]

    follower._js.stream_info = counted  # type: ignore[method-assign]
    try:
        await writer.upsert(chunks("m1", 2))
        assert all(await asyncio.gather(*(follower.caught_up(WAIT_S) for _ in range(50))))
        assert calls <= 2  # the first lookup, and one shared by every caller that came while it was in flight
        await writer.upsert(chunks("m2", 1, 4))
        assert await follower.caught_up(WAIT_S)  # a lookup issued after the write: it is seen
        assert len(await snapshot(follower)) == 3
    finally:
        await follower.stop()


async def test_a_running_follower_rebuilds_when_the_stream_is_replaced(nc: NatsClient, tmp_path: Path) -> None:
    writer = StreamPointWriter(nc)
    await writer.ensure_collection(DIM)
    await writer.upsert(chunks("m1", 2))
    follower = PointsFollower(nc, tmp_path / "f", "mnemo", DIM, retry_s=0.1, idle_check_s=0.2)
    await follower.start()
    try:
        assert set(await snapshot(follower)) == ids(chunks("m1", 2))
        await fresh_points_stream(nc)  # e.g. the NATS server's store wiped while the replica runs
        await writer.ensure_collection(DIM)
        second = chunks("m2", 1)
        await writer.upsert(second)

        async def rebuilt() -> bool:
            return follower.applied == 1

        await wait_until(rebuilt, "the follower applied the new stream from its start", WAIT_S)
        assert set(await snapshot(follower)) == ids(second)
    finally:
        await follower.stop()
