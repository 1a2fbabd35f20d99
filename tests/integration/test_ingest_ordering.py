"""Ingest keeps each conversation in publish order: while it overlaps consecutive batches (pipelining), through the
v1 router and the keyed subjects alike, and when replicas share the partitions and one of them dies holding
batches (mnemo/services/ingest/partitions.py, mnemo/shared/lease.py, mnemo/shared/delivery/order.py).

Real nats-server and SecantusDB: many messages interleaved across conversations are published as fast as
JetStream takes them, so each partition's consumer holds several small batches at once. Every conversation's
log must then hold its messages in publish order, indexes 0..n-1 with no gap and no duplicate, and the
read model must agree.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import nats
import pytest

from mnemo.services.ingest.app import create_router
from mnemo.shared import subjects
from mnemo.shared.events.recorded import conversation_stream
from mnemo.shared.lease import LEASE_BUCKET
from mnemo.shared.partitions import ingest_drained, ingest_progress
from mnemo.shared.readmodels import ReadModels
from mnemo_client.wire.keyed import subject_token
from tests.integration.ingest_stack import Stack, reset_streams, running
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

CONVERSATIONS = 15
MESSAGES = 1500
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
async def stack(nats_url: str, mongo_url: str, db_name: str) -> AsyncIterator[Stack]:
    async with running(nats_url, mongo_url, db_name, create_router) as s:  # batches of 64, 2 in flight
        yield s
    # The shared MNEMO_LOG stream would otherwise keep 1,500 events that later tests read from the start.
    nc = await nats.connect(nats_url)
    try:
        await reset_streams(nc.jetstream())
    finally:
        await nc.drain()


def conversation(i: int) -> str:
    return f"c{i % CONVERSATIONS:02d}"


def subject(i: int) -> str:
    """Conversations c00-c06 on the v1 subject (through the v1 router), the others on their keyed subject."""
    if i % CONVERSATIONS < 7:
        return subjects.MESSAGE_CREATED
    return subjects.keyed(subjects.MESSAGE_CREATED, "t1", subject_token(conversation(i)))


def body(i: int) -> bytes:
    return json.dumps(
        {
            "tenant_id": "t1",
            "user_id": "u1",
            "conversation_id": conversation(i),
            "message_id": f"m{i:05d}",  # zero-padded: message-id order is publish order
            "role": "user" if i % 2 else "assistant",
            "author_id": "a",
            "author_name": "A",
            "content": f"message {i}",
            "created_at": (T0 + timedelta(seconds=i)).isoformat(),
            "bot_ids": ["eli"] if (i // CONVERSATIONS) % 3 else ["mo"],
            "persona_id": "knight",
        }
    ).encode()


async def publish(stack: Stack, messages: range) -> None:
    """Pipelined publishes on one connection: JetStream stores them in the order they are sent."""
    for start in range(messages.start, messages.stop, 250):
        batch = range(start, min(start + 250, messages.stop))
        await asyncio.gather(*(stack.js.publish(subject(i), body(i)) for i in batch))


async def test_overlapping_batches_keep_every_conversation_in_publish_order(stack: Stack) -> None:
    await publish(stack, range(MESSAGES))
    await wait_until(lambda: ingest_drained(stack.js), "ingest acked everything", 120)

    await assert_in_publish_order(stack)


async def assert_in_publish_order(stack: Stack) -> None:
    expected: dict[str, list[str]] = defaultdict(list)
    for i in range(MESSAGES):
        expected[f"c{i % CONVERSATIONS:02d}"].append(f"m{i:05d}")
    rm = ReadModels(stack.db, stack.deps.cipher)
    for conv, message_ids in expected.items():
        log = await stack.store.read_stream(conversation_stream("t1", "u1", conv))
        assert [e.type for e in log] == ["message.recorded"] * len(message_ids), conv
        assert [e.version for e in log] == list(range(1, len(message_ids) + 1)), conv
        recorded = [(e.payload["message_id"], e.payload["index"]) for e in log]
        assert recorded == [(m, k) for k, m in enumerate(message_ids)], f"{conv}: out of publish order"

        state = await rm.conversation("t1", "u1", conv)
        assert state is not None
        assert (state.version, state.message_count) == (len(message_ids), len(message_ids)), conv
        projected = await rm.message_range("t1", "u1", conv, 0, include_deleted=True)
        assert [(m.message_id, m.index) for m in projected] == recorded, conv
    assert await stack.db["events"].count_documents({}) == MESSAGES


async def test_replicas_share_the_partitions_and_take_over_a_killed_ones_in_publish_order(
    nats_url: str, mongo_url: str, db_name: str, tmp_path: Path
) -> None:
    kek = os.urandom(32)
    env = {
        **os.environ,
        "MNEMO_NATS_URL": nats_url,
        "MNEMO_MONGODB_URL": mongo_url,
        "MNEMO_MONGODB_DB": db_name,
        "MNEMO_KEK": base64.b64encode(kek).decode(),
        "MNEMO_DATA_DIR": str(tmp_path),
        "MNEMO_DELIVERY__LEASE_TTL_S": "2",
        "MNEMO_DELIVERY__ACK_WAIT_S": "5",
        "MNEMO_DELIVERY__INGEST_BATCH_SIZE": "64",
        "PYTHONUNBUFFERED": "1",
        "MNEMO_OBSERVE__HTTP_PORT": "0",  # its probe server on a free port
    }
    async with running(nats_url, mongo_url, db_name, [], kek=kek) as stack:  # the replicas are processes
        with contextlib.suppress(Exception):  # leases and members left by an earlier test would delay this one
            await stack.js.purge_stream(f"KV_{LEASE_BUCKET}")
        with ingest_process(env, tmp_path / "a.log") as first, ingest_process(env, tmp_path / "b.log") as second:
            for log in ("a.log", "b.log"):
                await wait_until(lambda log=log: logged(tmp_path / log, " serving on "), f"replica {log} serves", 60)
            await wait_until(lambda: shared(stack), "both replicas hold partitions", 60)
            half = MESSAGES // 2
            await publish(stack, range(half))

            async def some_acked() -> bool:
                return sum(p.ack_floor > 0 for p in await ingest_progress(stack.js)) >= 8

            await wait_until(some_acked, "replica a and b recorded some messages", 60)
            first.kill()  # kill -9: batches in flight unacked, its leases neither refreshed nor freed
            await publish(stack, range(half, MESSAGES))
            await wait_until(lambda: ingest_drained(stack.js), "all recorded", 180)
            assert second.poll() is None, "replica b exited"
            assert logged_sync(tmp_path / "b.log", "ingest consumes v1, 0/16, 1/16")  # it took everything over
        await assert_in_publish_order(stack)
        await reset_streams(stack.js)


async def shared(stack: Stack) -> bool:
    """Both replicas consume: the partition leases are held by two processes."""
    kv = await stack.js.key_value(LEASE_BUCKET)
    holders = set()
    for k in range(16):
        with contextlib.suppress(Exception):
            entry = await kv.get(subjects.partition_lease(16, k))
            holders.add((entry.value or b"").rsplit(b":", 1)[-1])
    return len(holders) == 2


async def logged(path: Path, text: str) -> bool:
    return logged_sync(path, text)


def logged_sync(path: Path, text: str) -> bool:
    return path.exists() and text in path.read_text(errors="replace")


@contextlib.contextmanager
def ingest_process(env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "mnemo.services.ingest"], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
