"""Ingest end to end: nats-py publishes platform events to JetStream, ingest records them in SecantusDB.

Real nats-server and SecantusDB (session fixtures); nothing is mocked. Waiting is "until the durable
consumer has acked everything published", never a fixed sleep.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mnemo.services.ingest.app import create_router
from mnemo.services.ingest.recorder import Recorder
from mnemo.shared import subjects
from mnemo.shared.delivery import DLQ_REASON, DLQ_SUBJECT
from mnemo.shared.events.envelope import NewEvent
from mnemo.shared.events.recorded import conversation_stream, created_event_id
from mnemo.shared.partitions import ingest_drained
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.readmodels.catalog import CONVERSATIONS, drop
from mnemo.shared.tokens import estimate_tokens
from mnemo_client.wire.contract import MessageCreated
from tests.integration.ingest_stack import Stack, dead_letters, message_created, running
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
SECRET = "the vault code is swordfish"


@pytest.fixture
async def stack(nats_url: str, mongo_url: str, db_name: str) -> AsyncIterator[Stack]:
    async with running(nats_url, mongo_url, db_name, create_router) as s:
        yield s


def message(message_id: str, index_minute: int, **extra: Any) -> dict[str, Any]:
    created_at = T0 + timedelta(minutes=index_minute)
    return message_created(message_id, f"{SECRET} ({message_id})", created_at, **{"persona_id": "knight", **extra})


async def publish(stack: Stack, subject: str, body: dict[str, Any] | bytes) -> None:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    await stack.js.publish(subject, data)  # no Nats-Msg-Id: JetStream keeps every copy, ingest must dedupe


async def settle(stack: Stack) -> None:
    await wait_until(lambda: ingest_drained(stack.js), "ingest acked every chat message")


def models(stack: Stack) -> ReadModels:
    return ReadModels(stack.db, stack.deps.cipher)


async def test_records_each_message_once_and_projects_it(stack: Stack) -> None:
    for _ in range(3):
        await publish(stack, subjects.MESSAGE_CREATED, message("m1", 0))
    await publish(stack, subjects.MESSAGE_CREATED, message("m2", 1, bot_ids=["eli", "mo"]))
    bot_msg = message("m3", 2, role="assistant", author_id="eli", author_name="Eli", persona_id=None)
    await publish(stack, subjects.MESSAGE_CREATED, bot_msg)
    await publish(stack, subjects.MESSAGE_CREATED, message("m4", 3, persona_id="mage", bot_ids=["mo"]))
    edit = {"tenant_id": "t1", "user_id": "u1", "conversation_id": "c1", "message_id": "m1"}
    await publish(stack, subjects.MESSAGE_EDITED, edit | {"content": "edited words", "edited_at": T0.isoformat()})
    await publish(stack, subjects.MESSAGE_EDITED, edit | {"content": "edited words", "edited_at": T0.isoformat()})
    await publish(stack, subjects.MESSAGE_DELETED, edit | {"message_id": "m2", "deleted_at": T0.isoformat()})
    bot = {"tenant_id": "t1", "bot_id": "eli", "name": "Eli", "system_prompt": SECRET, "updated_at": T0.isoformat()}
    await publish(stack, subjects.BOT_UPSERTED, bot)
    persona = {
        "tenant_id": "t1",
        "user_id": "u1",
        "persona_id": "knight",
        "name": "Sir Ann",
        "description": SECRET,
        "traits": ["brave"],
        "updated_at": T0.isoformat(),
    }
    await publish(stack, subjects.PERSONA_UPSERTED, persona)
    await settle(stack)

    log = await stack.store.read_stream(conversation_stream("t1", "u1", "c1"))
    assert [e.type for e in log] == ["message.recorded"] * 4 + ["message.edited", "message.deleted"]
    assert [e.payload.get("index") for e in log[:4]] == [0, 1, 2, 3]

    rm = models(stack)
    state = await rm.conversation("t1", "u1", "c1")
    assert state is not None
    assert (state.version, state.message_count, state.deleted_count, state.edit_count) == (6, 4, 1, 1)
    assert [(b.bot_id, b.from_index, b.until_index) for b in state.bots] == [
        ("eli", 0, 3),
        ("mo", 1, 2),
        ("mo", 3, None),
    ]
    assert [(s.persona_id, s.from_index) for s in state.persona_switches] == [("knight", 0), ("mage", 3)]

    recent = await rm.recent("t1", "u1", "c1", 10)
    assert [(m.message_id, m.index) for m in recent] == [("m1", 0), ("m3", 2), ("m4", 3)]
    assert recent[0].content == "edited words"
    assert recent[0].edited_at == T0
    assert (recent[1].author_name, recent[1].role) == ("Eli", "assistant")
    assert [m.message_id for m in await rm.recent("t1", "u1", "c1", 2)] == ["m3", "m4"]
    assert [m.message_id for m in await rm.by_ids("t1", "u1", "c1", ["m4", "m2", "m1"])] == ["m1", "m4"]
    everything = await rm.message_range("t1", "u1", "c1", 0, include_deleted=True)
    assert [m.deleted for m in everything] == [False, True, False, False]

    eli = await rm.bot("t1", "eli")
    assert eli is not None
    assert (eli.name, eli.system_prompt) == ("Eli", SECRET)
    knight = await rm.persona("t1", "u1", "knight")
    assert knight is not None
    assert (knight.description, knight.traits) == (SECRET, ["brave"])
    assert await rm.bot("t2", "eli") is None  # another tenant sees nothing

    for name in ("rm_messages", "rm_bots", "rm_personas", "events"):  # encrypted at rest
        raw = await stack.db[name].find({}).to_list()
        assert raw, name
        assert "swordfish" not in repr(raw), name
        assert "edited words" not in repr(raw), name
    assert await stack.store.unpublished(0, 100) == []  # the relay published every committed event


async def test_invalid_payloads_are_dead_lettered_and_valid_ones_still_recorded(stack: Stack) -> None:
    await publish(stack, subjects.MESSAGE_CREATED, b"{this is not json")
    await publish(stack, subjects.MESSAGE_CREATED, {k: v for k, v in message("bad", 0).items() if k != "content"})
    await publish(stack, "mnemo.chat.message.teleported.v1", message("odd", 0))
    edit_unknown = {"tenant_id": "t1", "user_id": "u1", "conversation_id": "c1", "message_id": "ghost"}
    await publish(stack, subjects.MESSAGE_EDITED, edit_unknown | {"content": "x", "edited_at": T0.isoformat()})
    await publish(stack, subjects.MESSAGE_CREATED, message("ok1", 0))
    await publish(stack, subjects.MESSAGE_CREATED, message("ok2", 1))
    await settle(stack)

    letters = await dead_letters(stack.js, "ingest")
    reasons = {m.data: (m.headers or {}).get(DLQ_REASON, "") for m in letters}
    assert len(letters) == 4
    assert "Invalid JSON" in reasons[b"{this is not json"]
    assert any("content" in r and "Field required" in r for r in reasons.values())
    assert any("unknown subject" in r for r in reasons.values())
    assert any("'ghost'" in r and "not recorded" in r for r in reasons.values())
    assert {(m.headers or {}).get(DLQ_SUBJECT) for m in letters} >= {"mnemo.chat.message.teleported.v1"}

    recent = await models(stack).recent("t1", "u1", "c1", 10)
    assert [(m.message_id, m.index) for m in recent] == [("ok1", 0), ("ok2", 1)]


async def append_unprojected_m0(stack: Stack) -> str:
    """Record m0 (7 tokens) in the log only, the read models knowing nothing of it; returns its stream."""
    sid = conversation_stream("t1", "u1", "c1")
    payload = {k: v for k, v in message("m0", 0).items() if k != "tenant_id"} | {"index": 0, "tokens": 7}
    m0 = NewEvent(
        event_id=created_event_id("t1", "u1", "c1", "m0"), type="message.recorded", tenant_id="t1", payload=payload
    )
    await stack.store.append(sid, 0, [m0])
    return sid


async def test_a_lagging_projection_is_caught_up_from_the_log(stack: Stack) -> None:
    # Another replica appended m0 and crashed before projecting it: the read models know nothing of it.
    sid = await append_unprojected_m0(stack)
    await publish(stack, subjects.MESSAGE_CREATED, message("m0", 0))  # its redelivery: must stay one message
    await publish(stack, subjects.MESSAGE_CREATED, message("m1", 1))
    await settle(stack)

    assert [e.payload["message_id"] for e in await stack.store.read_stream(sid)] == ["m0", "m1"]
    rm = models(stack)
    state = await rm.conversation("t1", "u1", "c1")
    assert state is not None
    assert (state.version, state.message_count, state.token_count) == (2, 2, 7 + estimate_tokens(f"{SECRET} (m1)"))
    assert [(m.message_id, m.index) for m in await rm.recent("t1", "u1", "c1", 5)] == [("m0", 0), ("m1", 1)]


async def test_read_models_rebuild_from_the_log(stack: Stack) -> None:
    for i in range(5):
        await publish(stack, subjects.MESSAGE_CREATED, message(f"m{i}", i, bot_ids=["eli"] if i < 3 else ["mo"]))
    await settle(stack)
    rm = models(stack)
    before = await rm.conversation("t1", "u1", "c1")
    history = await rm.recent("t1", "u1", "c1", 10)

    await drop(stack.db, CONVERSATIONS)
    assert await rm.conversation("t1", "u1", "c1") is None
    replayed = [e async for e in stack.store.read_all(batch_size=2)]
    for i in range(0, len(replayed), 2):  # replay in batches, as `mnemo replay` would
        await rm.apply(replayed[i : i + 2])
    assert await rm.conversation("t1", "u1", "c1") == before
    assert await rm.recent("t1", "u1", "c1", 10) == history


async def test_a_redelivery_beside_a_new_message_heals_a_lagging_projection(stack: Stack) -> None:
    # Same lagging log as above, but the redelivery and a new message are decided in ONE batch: the
    # redelivery is a duplicate in the log and the projection must still end up complete.
    sid = await append_unprojected_m0(stack)
    rm = models(stack)
    recorder = Recorder(stack.store, rm, stack.deps.saver)
    commands = [MessageCreated.model_validate(message("m0", 0)), MessageCreated.model_validate(message("m1", 1))]
    assert await recorder.record(commands) == [None, None]

    assert [e.payload["message_id"] for e in await stack.store.read_stream(sid)] == ["m0", "m1"]
    state = await rm.conversation("t1", "u1", "c1")
    assert state is not None
    assert (state.version, state.message_count) == (2, 2)
    assert [(m.message_id, m.index) for m in await rm.recent("t1", "u1", "c1", 5)] == [("m0", 0), ("m1", 1)]
