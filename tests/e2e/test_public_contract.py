"""The whole embedded stack driven through the public contract only: plain nats-py and JSON, no project
imports, exactly what a platform integrating mnemo would write."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import nats
import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CREATED = "mnemo.chat.message.created.v1"
ASSEMBLE = "mnemo.rpc.context.assemble.v1"

SMALL_TALK = [
    "The weather has been strange this week, rain in the morning and sun by noon.",
    "I finally finished repainting the kitchen, a pale green this time.",
    "Did you watch the football match last night? What a finish.",
    "My neighbour's dog keeps digging under the fence.",
    "I'm thinking of taking a pottery class on Thursdays.",
    "Work was busy, three meetings back to back before lunch.",
    "We tried the new ramen place downtown, the broth was excellent.",
    "I need to renew my passport before the summer.",
]
DISTINCTIVE = (
    "My grandfather left me an old violin made in Cremona in 1891, with a tiny crack near the scroll; "
    "I'm taking it to a luthier in Vienna to have it restored."
)


def conversation(tenant: str, user: str, conv: str, n: int = 40) -> list[dict[str, Any]]:
    start = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
    msgs = []
    for i in range(n):
        is_user = i % 2 == 0
        content = DISTINCTIVE if i == 2 else f"{SMALL_TALK[i % len(SMALL_TALK)]} (turn {i})"
        msgs.append(
            {
                "tenant_id": tenant,
                "user_id": user,
                "conversation_id": conv,
                "message_id": f"m-{i:03d}",
                "role": "user" if is_user else "assistant",
                "author_id": "persona-1" if is_user else "bot-1",
                "author_name": "Alex" if is_user else "Sage",
                "content": content,
                "created_at": (start + timedelta(minutes=i)).isoformat(),
                "bot_ids": ["bot-1"],
                "persona_id": "persona-1",
            }
        )
    return msgs


def request(tenant: str, user: str, conv: str, question: str, max_tokens: int = 600) -> bytes:
    return json.dumps(
        {
            "tenant_id": tenant,
            "user_id": user,
            "conversation_id": conv,
            "bot_id": "bot-1",
            "persona_id": "persona-1",
            "user_message": question,
            "max_tokens": max_tokens,
        }
    ).encode()


async def ask(nc: nats.NATS, payload: bytes) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads((await nc.request(ASSEMBLE, payload, timeout=15)).data)
    return reply


async def wait_for(nc: nats.NATS, payload: bytes, ready: Any, timeout: float = 90.0) -> dict[str, Any]:
    """Poll the context until ``ready(reply)``: ingest and embedding run asynchronously."""
    deadline = asyncio.get_running_loop().time() + timeout
    reply = await ask(nc, payload)
    while not ready(reply) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.5)
        reply = await ask(nc, payload)
    return reply


def section(reply: dict[str, Any], name: str) -> str:
    return "\n".join(s["text"] for s in reply["sections"] if s["name"] == name)


def message_sources(reply: dict[str, Any]) -> set[str]:
    return {mid for s in reply["sources"] if s["kind"] == "message" for mid in s["message_ids"]}


async def test_history_and_retrieval_through_the_public_contract(stack: Any) -> None:
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        js = nc.jetstream()
        for msg in conversation("tenant-a", "user-1", "conv-1"):
            ack = await js.publish(CREATED, json.dumps(msg).encode(), headers={"Nats-Msg-Id": msg["message_id"]})
            assert ack.stream

        question = request("tenant-a", "user-1", "conv-1", "What did I say about the violin and the luthier?")

        def ready(reply: dict[str, Any]) -> bool:
            return "(turn 39)" in section(reply, "history") and "m-002" in message_sources(reply)

        reply = await wait_for(nc, question, ready)
        assert "error" not in reply, reply
        history = section(reply, "history")
        assert "(turn 39)" in history, reply
        assert "(turn 38)" in history, reply
        assert "m-002" in message_sources(reply), reply["sources"]
        assert "Cremona" in reply["context"]
        assert reply["token_count"] <= 600
        assert reply["token_count"] == sum(s["tokens"] for s in reply["sections"])

        # Same ids under another tenant, and another user of the same tenant: nothing of tenant-a/user-1.
        for tenant, user in (("tenant-b", "user-1"), ("tenant-a", "user-2")):
            other = await ask(nc, request(tenant, user, "conv-1", "What did I say about the violin?"))
            assert "error" not in other, other
            assert "Cremona" not in other["context"]
            assert "(turn" not in other["context"]
            assert not message_sources(other)
    finally:
        await nc.drain()


async def test_invalid_request_gets_an_error_reply(stack: Any) -> None:
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        bad_json = json.loads((await nc.request(ASSEMBLE, b"{not json", timeout=10)).data)
        assert bad_json["error"]["code"] == "bad_request"
        missing = json.loads((await nc.request(ASSEMBLE, json.dumps({"user_id": "u"}).encode(), timeout=10)).data)
        assert missing["error"]["code"] == "bad_request"
        assert "tenant_id" in missing["error"]["message"]
    finally:
        await nc.drain()
