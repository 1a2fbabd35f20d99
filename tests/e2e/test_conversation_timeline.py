"""Conversation reads end to end, over NATS only: ``mnemo.rpc.conversation.list.v1`` and ``timeline.v1``.

A scene with two bots (one leaves), a persona switch, a swipe and a fork: the timeline shows who was present
at each message, the persona switch where it happened, the alternatives with the current one marked, the facts
learned at the message they came from, the summaries as spans with their audience, and the fork family. The
list shows the tenant's conversations only, and another user's or tenant's conversation is ``not_found``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import nats
import pytest

from tests.e2e.subjects import BOT_UPSERTED, CONVERSATION_LIST, CREATED, FORKED, TIMELINE
from tests.waiting import wait_for_stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

T0 = datetime(2026, 10, 3, 20, 0, tzinfo=UTC)
TENANT, USER, CONV = "t-timeline", "u-1", "tl-c"
LINES = [
    ("p-ilya", "We reached the harbour at dawn."),
    ("rowan", "Listen closely. The secret is that the crown lies under the obsidian stone."),
    ("p-ilya", "Then we should find a boat."),
    ("wren", "The ferryman asks for two silver coins."),
    ("p-mask", "I put on the mask and speak as the stranger now."),
    ("rowan", "The stranger is welcome aboard, whoever they are."),
    ("p-mask", "We sail north past the lighthouse."),
    ("rowan", "The lighthouse keeper waves a green lantern."),
]


def message(i: int, author: str, content: str, **extra: Any) -> dict[str, Any]:
    user_turn = author.startswith("p-")
    persona = author if user_turn else ("p-ilya" if i < 4 else "p-mask")
    return {
        "tenant_id": TENANT, "user_id": USER, "conversation_id": CONV, "message_id": f"{CONV}-m{i}",
        "role": "user" if user_turn else "assistant", "author_id": author, "author_name": author,
        "content": content, "created_at": (T0 + timedelta(minutes=i)).isoformat(),
        "bot_ids": ["rowan", "wren"] if i < 4 else ["rowan"], "persona_id": persona, **extra,
    }  # fmt: skip


async def call(nc: nats.NATS, subject: str, **body: Any) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads((await nc.request(subject, json.dumps(body).encode(), timeout=30)).data)
    return reply


async def test_the_timeline_shows_presence_swipes_facts_summaries_and_forks(stack: Any) -> None:
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    js = nc.jetstream()
    try:
        bot = {"tenant_id": TENANT, "bot_id": "rowan", "name": "Rowan", "updated_at": T0.isoformat()}
        await js.publish(BOT_UPSERTED, json.dumps(bot).encode())
        for i, (author, text) in enumerate(LINES):
            await js.publish(CREATED, json.dumps(message(i, author, text)).encode())
        swipe = message(5, "rowan", "The stranger may come aboard if they pay.", message_id=f"{CONV}-s5")
        await js.publish(CREATED, json.dumps({**swipe, "swipe_of": f"{CONV}-m5"}).encode())
        fork = {"tenant_id": TENANT, "user_id": USER, "conversation_id": f"{CONV}-fork", "parent_conversation_id": CONV,
                "from_message_id": f"{CONV}-m3", "forked_at": (T0 + timedelta(hours=1)).isoformat()}  # fmt: skip
        await js.publish(FORKED, json.dumps(fork).encode())
        ask = {"tenant_id": TENANT, "user_id": USER, "conversation_id": CONV}

        async def complete() -> bool:
            reply = await call(nc, TIMELINE, **ask)
            if "error" in reply or len(reply["messages"]) < len(LINES) or len(reply["forks"]) < 1:
                return False
            alternatives = reply["messages"][5]["alternatives"]
            return bool(reply["messages"][1]["facts"]) and len(alternatives) == 2

        await wait_for_stack(complete, "every message, the swipe, a fact of the secret and the fork in the timeline")
        reply = await call(nc, TIMELINE, **ask)
        messages = reply["messages"]
        assert [m["index"] for m in messages] == list(range(len(LINES)))
        assert (messages[0]["present"], messages[6]["present"]) == (["rowan", "wren"], ["rowan"])
        assert [m["persona_switch"] for m in messages] == [True, False, False, False, True, False, False, False]
        assert (messages[4]["persona_id"], messages[2]["persona_id"]) == ("p-mask", "p-ilya")
        original, swiped = messages[5]["alternatives"]
        assert (original["message_id"], original["current"]) == (f"{CONV}-m5", False)
        assert (swiped["message_id"], swiped["current"]) == (f"{CONV}-s5", True)
        assert messages[5]["content"] == "The stranger may come aboard if they pay."
        assert any("obsidian" in f["text"].lower() for f in messages[1]["facts"])
        assert reply["forks"] == [{"conversation_id": f"{CONV}-fork", "parent_conversation_id": CONV, "fork_index": 3}]
        assert reply["conversation"]["bots"][0] == {"id": "rowan", "name": "Rowan"}
        assert {p["id"] for p in reply["conversation"]["personas"]} == {"p-ilya", "p-mask"}
        for span in reply["summaries"]:
            assert 0 <= span["first_index"] <= span["last_index"] < len(LINES)
            assert span["audience"]

        page = await call(nc, TIMELINE, **ask, from_index=2, limit=3)
        assert ([m["index"] for m in page["messages"]], page["next_index"]) == ([2, 3, 4], 5)

        listed = await call(nc, CONVERSATION_LIST, tenant_id=TENANT)
        assert {c["conversation_id"] for c in listed["conversations"]} == {CONV, f"{CONV}-fork"}
        assert (await call(nc, CONVERSATION_LIST, tenant_id="t-nobody"))["conversations"] == []
        for other in ({**ask, "user_id": "u-2"}, {**ask, "tenant_id": "t-nobody"}):
            assert (await call(nc, TIMELINE, **other))["error"]["code"] == "not_found"
        assert (await call(nc, TIMELINE, **ask, limit=0))["error"]["code"] == "bad_request"
    finally:
        await nc.drain()
