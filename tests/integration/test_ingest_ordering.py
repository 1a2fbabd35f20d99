"""Ingest keeps each conversation in stream order while it overlaps consecutive batches (pipelining).

Real nats-server and SecantusDB: many messages interleaved across conversations are published as fast as
JetStream takes them, so the ingest consumer holds several small batches at once. Every conversation's
log must then hold its messages in publish order, indexes 0..n-1 with no gap and no duplicate, and the
read model must agree.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from services.ingest.app import create_router
from shared import subjects
from shared.events.recorded import conversation_stream
from shared.readmodels import ReadModels
from tests.integration.ingest_stack import Stack, drained, reset_streams, running
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

CONVERSATIONS = 15
MESSAGES = 1500
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
async def stack(nats_url: str, mongo_url: str, db_name: str) -> AsyncIterator[Stack]:
    async with running(nats_url, mongo_url, db_name, create_router) as s:  # batches of 64, 2 in flight
        yield s
        # The shared MNEMO_LOG stream would otherwise keep 1,500 events that later tests read from the start.
        await reset_streams(s.js)


def body(i: int) -> bytes:
    conv = i % CONVERSATIONS
    return json.dumps(
        {
            "tenant_id": "t1",
            "user_id": "u1",
            "conversation_id": f"c{conv:02d}",
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


async def test_overlapping_batches_keep_every_conversation_in_publish_order(stack: Stack) -> None:
    # Pipelined publishes on one connection: JetStream stores them in the order they are sent.
    for start in range(0, MESSAGES, 250):
        await asyncio.gather(
            *(stack.js.publish(subjects.MESSAGE_CREATED, body(i)) for i in range(start, min(start + 250, MESSAGES)))
        )
    stored = [json.loads((await stack.js.get_msg(subjects.CHAT_STREAM, seq)).data or b"") for seq in (1, MESSAGES)]
    assert [m["message_id"] for m in stored] == ["m00000", f"m{MESSAGES - 1:05d}"]
    await wait_until(
        lambda: drained(stack.js, subjects.CHAT_STREAM, subjects.durable("ingest")), "ingest acked everything", 120
    )

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
