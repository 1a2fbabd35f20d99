"""Lore through the public contract only (plain nats-py and JSON against the embedded stack as a process):
a real book (the Lythora Station World Info file) imported and attached to a bot, a vector-mode entry added
to it, chat messages that mention keys and a question that only paraphrases the vector entry; the context
lists each entry with why it fired. Another bot's conversation and another tenant never see the book. Then
the entry is edited (the context follows) and deleted (it is gone)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CREATED = "mnemo.chat.message.created.v1"
ASSEMBLE = "mnemo.rpc.context.assemble.v1"
TENANT, OTHER_TENANT, USER, CREATOR = "lore-tenant", "lore-tenant-b", "player-1", "creator-1"
BOT, OTHER_BOT = "bot-guide", "bot-other"
REEF = "The coral reef beneath the station glows blue at night, lit by bioluminescent plankton that rise with the tide."
REACTOR = "The station's power plant runs on geothermal vents deep below the seabed, with batteries for storms."
ASK_REEF = "Why does the water under the base shine in the dark?"
ASK_POWER = "How is the outpost powered when the sun is gone?"
LINES = [
    ("user", "We landed on the planet at dawn."),
    ("assistant", "Welcome. The shuttle bay is behind us."),
    ("user", "Which way to the Research Labs? These samples go to the Marine Lab."),
]


async def rpc(nc: Client, subject: str, body: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads((await nc.request(subject, json.dumps(body).encode(), timeout=30)).data)
    return reply


async def publish_chat(nc: Client, tenant: str, conversation: str, bot: str) -> None:
    js = nc.jetstream()
    start = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
    for i, (role, text) in enumerate(LINES):
        msg = {
            "tenant_id": tenant, "user_id": USER, "conversation_id": conversation, "message_id": f"{conversation}-{i}",
            "role": role, "author_id": bot if role == "assistant" else None,
            "author_name": "Guide" if role == "assistant" else "Mira", "content": text,
            "created_at": (start + timedelta(minutes=i)).isoformat(), "bot_ids": [bot], "persona_id": None,
        }  # fmt: skip
        await js.publish(CREATED, json.dumps(msg).encode(), headers={"Nats-Msg-Id": f"{tenant}/{msg['message_id']}"})


def ask(tenant: str, conversation: str, bot: str, message: str) -> dict[str, Any]:
    return {"tenant_id": tenant, "user_id": USER, "conversation_id": conversation, "bot_id": bot,
            "persona_id": None, "user_message": message, "max_tokens": 3000}  # fmt: skip


def lore(reply: dict[str, Any]) -> dict[str, str]:
    assert "error" not in reply, reply
    return {s["id"]: s["detail"] for s in reply["sources"] if s["kind"] == "lore"}


async def until(nc: Client, request: dict[str, Any], ready: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Poll the context until ``ready``: ingest and embedding run asynchronously (90 s at most)."""
    deadline = asyncio.get_running_loop().time() + 90
    reply = await rpc(nc, ASSEMBLE, request)
    while not ready(reply) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.5)
        reply = await rpc(nc, ASSEMBLE, request)
    return reply


def similarity(detail: str | None) -> float:
    assert detail is not None
    assert detail.startswith("similarity: "), detail
    return float(detail.removeprefix("similarity: "))


async def test_keyword_and_vector_lore_in_the_context_only_where_attached(stack: Any, shared_dir: Path) -> None:
    book = json.loads((shared_dir / "fixtures/lorebooks/chub-wi_lythora-station.json").read_text())
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        imports = [
            await rpc(
                nc,
                "mnemo.rpc.lore.import.v1",
                {"tenant_id": t, "owner_user_id": CREATOR, "name": "Lythora", "data": book, "attach_to_bots": [BOT]},
            )
            for t in (TENANT, OTHER_TENANT)
        ]
        book_id = imports[0]["lorebook_id"]
        reef = await rpc(
            nc,
            "mnemo.rpc.lore.entry.create.v1",
            {"tenant_id": TENANT, "user_id": CREATOR, "lorebook_id": book_id,
             "entry": {"content": REEF, "activationMode": "vector", "comment": "The glowing reef"}},
        )  # fmt: skip
        reef_id = f"{book_id}.{reef['uid']}"
        await publish_chat(nc, TENANT, "conv-1", BOT)
        await publish_chat(nc, TENANT, "conv-2", OTHER_BOT)
        await publish_chat(nc, OTHER_TENANT, "conv-1", BOT)

        lab_id = f"{book_id}.4"
        asked = ask(TENANT, "conv-1", BOT, ASK_REEF)
        reply = await until(nc, asked, lambda r: {lab_id, reef_id} <= set(lore(r)))
        details = lore(reply)
        assert details[lab_id] == "key: Research Labs (secondary: Marine Lab)", details
        assert similarity(details[reef_id]) >= 0.35
        assert REEF in reply["context"]
        assert "Lythora Station features several specialized labs" in reply["context"]

        # Another bot of the same user and tenant, and the same ids under another tenant (which has its own
        # copy of the book without the vector entry): none of this tenant's lore.
        other_bot = await until(nc, ask(TENANT, "conv-2", OTHER_BOT, ASK_REEF), lambda r: "Marine Lab" in r["context"])
        assert lore(other_bot) == {}
        assert "specialized labs" not in other_bot["context"]
        other_tenant = await until(
            nc, ask(OTHER_TENANT, "conv-1", BOT, ASK_REEF), lambda r: f"{imports[1]['lorebook_id']}.4" in lore(r)
        )
        assert reef_id not in lore(other_tenant)
        assert REEF not in other_tenant["context"]

        # Management: the edited entry is found by its new meaning and no longer by its old one.
        edited = await rpc(
            nc,
            "mnemo.rpc.lore.entry.update.v1",
            {"tenant_id": TENANT, "user_id": CREATOR, "lorebook_id": book_id, "uid": reef["uid"],
             "changes": {"content": REACTOR}},
        )  # fmt: skip
        assert edited["changed"], edited
        power = await until(nc, ask(TENANT, "conv-1", BOT, ASK_POWER), lambda r: REACTOR in r["context"])
        assert similarity(lore(power).get(reef_id)) >= 0.35
        assert REEF not in power["context"]
        stale = await rpc(nc, ASSEMBLE, ask(TENANT, "conv-1", BOT, ASK_REEF))
        assert REEF not in stale["context"]

        deleted = await rpc(
            nc,
            "mnemo.rpc.lore.entry.delete.v1",
            {"tenant_id": TENANT, "user_id": CREATOR, "lorebook_id": book_id, "uid": reef["uid"]},
        )
        assert deleted["deleted"], deleted
        gone = await rpc(nc, ASSEMBLE, ask(TENANT, "conv-1", BOT, ASK_POWER))
        assert reef_id not in lore(gone)
        assert REACTOR not in gone["context"]
        assert lab_id in lore(gone), "the book's other entries still fire"
    finally:
        await nc.drain()
