"""The memory surface on the whole embedded stack, driven like a platform would: chat messages published on
JetStream, the summarizer writes a summary on its own, then the user lists, converts and deletes it over
request-reply. Plain nats-py and JSON, no project imports."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import nats
import pytest

from tests.e2e.scenes import LIGHTHOUSE as LINES
from tests.e2e.scenes import turn
from tests.e2e.stackproc import StackProcess
from tests.e2e.subjects import CREATED

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

LIST, CONVERT, DELETE = "mnemo.rpc.memory.list.v1", "mnemo.rpc.memory.convert_to_lore.v1", "mnemo.rpc.memory.delete.v1"
TENANT, USER, CONV = "t-memory", "u-1", "c-1"


def messages(n: int) -> list[dict[str, Any]]:
    start = datetime(2026, 10, 1, 20, 0, tzinfo=UTC)
    return [
        turn(
            i,
            LINES[i % len(LINES)],
            start + timedelta(minutes=i),
            tenant=TENANT,
            user=USER,
            conv=CONV,
            message_id=f"m-{i}",
            persona=("persona-1", "Alex"),
            bot=("bot-1", "Sage"),
        )
        for i in range(n)
    ]


async def call(nc: nats.NATS, subject: str, body: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads((await nc.request(subject, json.dumps(body).encode(), timeout=15)).data)
    return reply


async def listed(nc: nats.NATS, ready: Any, timeout: float = 120.0, **filters: Any) -> dict[str, Any]:
    """Poll the listing until ``ready(reply)``: ingest and the summarizer run asynchronously."""
    deadline = asyncio.get_running_loop().time() + timeout
    body = {"tenant_id": TENANT, "user_id": USER, **filters}
    reply = await call(nc, LIST, body)
    while not ready(reply) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.5)
        reply = await call(nc, LIST, body)
    return reply


async def test_a_summary_is_listed_converted_to_legacy_lore_and_deleted(stack: StackProcess) -> None:
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        js = nc.jetstream()
        for msg in messages(6):
            await js.publish(CREATED, json.dumps(msg).encode(), headers={"Nats-Msg-Id": msg["message_id"]})
        first = await listed(nc, lambda r: r.get("total", 0) >= 1, source="memory")
        assert first["total"] >= 1, "the summarizer wrote no summary after six messages"
        memory = first["items"][0]
        assert memory["source"] == "memory"
        assert {"bot-1", "persona-1"} <= set(memory["participants"])
        assert memory["converted_to_lore"] is False

        owner = {"tenant_id": TENANT, "user_id": USER, "memory_id": memory["id"]}
        stranger = await call(nc, CONVERT, owner | {"user_id": "u-2", "applies_to_bots": ["bot-1"]})
        converted = await call(
            nc, CONVERT, owner | {"applies_to_bots": ["bot-2"], "applies_to_personas": ["persona-1"]}
        )
        assert stranger["error"]["code"] == "not_found"
        assert converted["created"] is True

        both = await listed(nc, lambda r: any(i["source"] == "legacy_lore" for i in r["items"]), source="memory")
        legacy = next(i for i in both["items"] if i["source"] == "legacy_lore")
        assert (legacy["id"], legacy["memory_id"], legacy["text"]) == (
            converted["legacy_id"],
            memory["id"],
            memory["text"],
        )
        assert legacy["applies_to"] == ["bot-2", "persona-1"]
        converted_only = await call(nc, LIST, {"tenant_id": TENANT, "user_id": USER, "converted_to_lore": True})
        assert [i["id"] for i in converted_only["items"]] == [memory["id"]]

        deleted = await call(nc, DELETE, owner)
        assert deleted == {"memory_id": memory["id"], "deleted": True, "legacy_ids": [converted["legacy_id"]]}
        after = await call(nc, LIST, {"tenant_id": TENANT, "user_id": USER, "limit": 200})
        assert memory["id"] not in {i["id"] for i in after["items"]}
        assert converted["legacy_id"] not in {i["id"] for i in after["items"]}
        assert (await call(nc, CONVERT, owner | {"applies_to_bots": ["bot-1"]}))["error"]["code"] == "not_found"
    finally:
        await nc.drain()
