"""Timed World Info effects persist per conversation in the log, over real NATS and SecantusDB.

A book with a sticky entry is imported and attached to a bot; the key is said once, then the chat moves on
without it: the entry stays (sticky) for its messages, then rests (cooldown). The state lives in the
conversation's ``lore_timed`` stream, so another assembler (a restarted or second replica) continues it,
and it is rebuilt from the log alone.
"""

from __future__ import annotations

import uuid

import pytest

from mnemo.shared import subjects
from mnemo.shared.events.recorded import bot_stream, lore_timed_stream
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.readmodels.catalog import LORE_TIMED, drop
from mnemo.shared.readmodels.lore_timed import LoreTimedReadModel
from tests.envelopes import message_recorded, recorded
from tests.integration.ingest_stack import Stack, running
from tests.integration.test_lore import T0, call, routers

pytestmark = pytest.mark.integration

USER, CONV, BOT = "u1", "c1", "bot-ada"
BOOK = {
    "entries": {
        "0": {"uid": 0, "key": ["storm"], "content": "A storm front is coming.", "sticky": 3, "cooldown": 2,
              "position": 4, "depth": 1, "order": 100},
    }
}  # fmt: skip


async def say(stack: Stack, tenant: str, index: int, text: str) -> None:
    """Record message ``index`` of the conversation (the bot present) in the read models."""
    event = message_recorded(
        tenant, USER, CONV, index, text, created_at=T0, author_name="Mira", bot_ids=[BOT], tokens=5
    )
    await ReadModels(stack.db, stack.deps.cipher).apply([event])


async def storm_why(stack: Stack, tenant: str) -> str | None:
    body = {"tenant_id": tenant, "user_id": USER, "conversation_id": CONV, "bot_id": BOT, "max_tokens": 3000}
    reply = await call(stack.nc, subjects.CONTEXT_ASSEMBLE, body)
    assert "error" not in reply, reply
    assert reply["degraded"] == [], reply["degraded"]
    return next((s["detail"] for s in reply["sources"] if s["kind"] == "lore"), None)


async def test_sticky_and_cooldown_follow_the_conversation_through_the_log(nats_url, mongo_url, db_name):
    tenant = f"tenant-{uuid.uuid4().hex[:8]}"
    async with running(nats_url, mongo_url, db_name, routers(history_limit=4)) as stack:
        bot = {"bot_id": BOT, "owner_user_id": None, "name": "Ada", "system_prompt": "", "updated_at": T0}
        await ReadModels(stack.db, stack.deps.cipher).apply(
            [recorded(tenant, bot_stream(tenant, BOT), 1, "bot.recorded", bot, T0)]
        )
        imported = await call(stack.nc, subjects.LORE_IMPORT, {
            "tenant_id": tenant, "owner_user_id": "creator", "name": "Weather", "data": BOOK,
            "attach_to_bots": [BOT],
        })  # fmt: skip
        assert "error" not in imported, imported
        for i in range(10):
            await say(stack, tenant, i, f"small talk {i}")
        await say(stack, tenant, 10, "Look, a storm on the horizon")
        seen = {11: await storm_why(stack, tenant)}  # the chat has 11 messages
        assert await storm_why(stack, tenant) == seen[11], "asking again (a regenerate) changes nothing"
        for i in range(11, 16):
            await say(stack, tenant, i, "storm" if i == 13 else f"small talk {i}")
            seen[i + 1] = await storm_why(stack, tenant)

        stream = lore_timed_stream(tenant, USER, CONV)
        logged = await stack.store.read_stream(stream)
        model = LoreTimedReadModel(stack.db)
        kept = await model.state(tenant, USER, CONV)
        await drop(stack.db, LORE_TIMED)
        await model.apply(logged)
        rebuilt = await model.state(tenant, USER, CONV)

    assert seen == {
        11: "key: storm",
        12: "sticky",  # the key left the scanned depth (2) at 13 messages, sticky holds it until then
        13: "sticky",
        14: None,  # sticky over; the 2-message cooldown blocks the key said in message 13
        15: None,
        16: None,  # cooldown over, but no key in the scanned depth any more
    }
    assert [e.type for e in logged] == ["lore.timed_state_recorded"] * len(logged)
    counts = [e.payload["message_count"] for e in logged]
    assert counts == sorted(set(counts)), "one event per change, never two for one turn (the regenerate wrote none)"
    assert counts[0] == 11
    assert len(logged) < 7, "requests that change nothing record nothing"
    assert logged[-1].payload["sticky"] == logged[-1].payload["cooldown"] == {}, "all effects over at 16"
    assert rebuilt == kept
    assert kept.version == len(logged)
