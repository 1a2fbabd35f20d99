"""Kill the whole stack with SIGKILL (mnemo, nats-server, SecantusDB) while 2,000 messages are being
published, restart it, and check every message is recorded exactly once and embedded exactly once.

The publisher behaves like a real platform: it retries every publish that was not acknowledged, with the
message id as ``Nats-Msg-Id``, until JetStream acknowledges it.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nats
import pytest
from pymongo import AsyncMongoClient

from mnemo.shared.events.recorded import conversation_stream
from mnemo.shared.partitions import ingest_drained
from mnemo.shared.settings import Settings
from mnemo.shared.vectors.factory import build_vector_index
from mnemo.shared.vectors.points import point_id
from mnemo.shared.vectors.port import VectorFilter
from tests.e2e.scenes import turn
from tests.e2e.stackproc import StackProcess

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TOTAL = 2000
KILL_AFTER = 600
CONVERSATIONS = 20
TENANT, USER = "crash-tenant", "crash-user"


def message(i: int) -> dict[str, Any]:
    return turn(
        i,
        f"Message number {i} about topic {i % 37}: the quick brown fox jumps over lazy dog {i}.",
        datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i),
        tenant=TENANT,
        user=USER,
        conv=f"conv-{i % CONVERSATIONS}",
        message_id=f"msg-{i:05d}",
        persona=("p1", "Pat"),
        bot=("b1", "Bot"),
    )


class RetryingPublisher:
    """Publishes messages in order, retrying each until JetStream acknowledges it (through outages)."""

    def __init__(self, url: str, options: dict[str, Any]) -> None:
        self.url = url
        self.options = options
        self.acked = 0

    async def run(self) -> None:
        nc = await nats.connect(self.url, max_reconnect_attempts=-1, reconnect_time_wait=0.2, **self.options)
        js = nc.jetstream(timeout=2)
        try:
            for i in range(TOTAL):
                body = json.dumps(message(i)).encode()
                while True:
                    try:
                        await js.publish("mnemo.chat.message.created.v1", body, headers={"Nats-Msg-Id": f"msg-{i:05d}"})
                        break
                    except Exception:  # timeout, no responders, connection lost: a platform retries
                        await asyncio.sleep(0.2)
                self.acked = i + 1
        finally:
            await nc.close()


async def consumers_idle(url: str, options: dict[str, Any]) -> bool:
    nc = await nats.connect(url, **options)
    try:
        js = nc.jetstream()
        if not await ingest_drained(js):  # the v1 router and every partition
            return False
        for stream, durable in (("MNEMO_LOG", "mnemo_embedding_main"),):
            info = await js.consumer_info(stream, durable)
            if info.num_pending or info.num_ack_pending:
                return False
        return True
    finally:
        await nc.close()


async def recorded_counts(mongo_url: str) -> tuple[int, int]:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongo_url)
    try:
        events = client["mnemo"]["events"]
        streams = [conversation_stream(TENANT, USER, f"conv-{c}") for c in range(CONVERSATIONS)]
        query = {"stream_id": {"$in": streams}, "type": "message.recorded"}
        total = await events.count_documents(query)
        distinct = len(await events.distinct("_id", query))
        return total, distinct
    finally:
        await client.close()


async def test_sigkill_during_publishing_loses_nothing_and_duplicates_nothing(tmp_path: Path) -> None:
    stack = StackProcess(tmp_path / "stack")
    stack.start()
    publisher = RetryingPublisher(stack.nats_url, stack.client_options())
    publishing = asyncio.create_task(publisher.run())
    try:
        while publisher.acked < KILL_AFTER:
            await asyncio.sleep(0.05)
        stack.kill_all()  # mnemo and both servers, all at once, mid-stream
        await asyncio.sleep(1.0)
        await asyncio.to_thread(stack.start)
        await asyncio.wait_for(publishing, timeout=600)

        deadline = asyncio.get_running_loop().time() + 600
        while asyncio.get_running_loop().time() < deadline:
            total, _ = await recorded_counts(stack.mongo_url)
            if total >= TOTAL and await consumers_idle(stack.nats_url, stack.client_options("admin")):
                break
            await asyncio.sleep(1.0)
        total, distinct = await recorded_counts(stack.mongo_url)
        assert (total, distinct) == (TOTAL, TOTAL), stack.log_tail()
    finally:
        if not publishing.done():
            publishing.cancel()
        assert stack.stop() == 0, stack.log_tail()

    # The vector index is in-process (one owner): open it now that the stack has stopped.
    settings = Settings(data_dir=tmp_path / "stack")
    index = build_vector_index(settings)
    await index.ensure_collection(settings.embedder.dimensions)
    try:
        tenant_filter = VectorFilter.where(tenant_id=TENANT, kind="message")
        assert await index.count(tenant_filter) == TOTAL
        expected = [
            point_id("message", TENANT, USER, message(i)["conversation_id"], f"msg-{i:05d}", 0) for i in range(TOTAL)
        ]
        found = await index.retrieve(expected)
        assert len({p.id for p in found}) == TOTAL
    finally:
        await index.close()
