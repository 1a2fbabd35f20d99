"""Ingest on the in-memory log and read models: platform chat events become log events and projections.

Driven through ``IngestHandler.on_chat_batch`` (what the JetStream batch consumer calls) with commands
decoded by subject like the consumer's decoder; each test starts from a fresh handler, log and read model.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from mnemo.services.ingest.handlers import IngestHandler, decode_command
from mnemo.services.ingest.recorder import Recorder
from mnemo.shared import subjects
from mnemo.shared.delivery import InvalidMessage
from mnemo.shared.events.recorded import conversation_stream
from mnemo.shared.readmodels.inmemory import InMemoryReadModels
from tests.components import deps, items, published

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
T, U, C = "t1", "u1", "c1"
STREAM = conversation_stream(T, U, C)


class Ingest:
    def __init__(self) -> None:
        self.deps = deps()
        self.store = self.deps.store
        self.models = InMemoryReadModels()
        self.handler = IngestHandler(Recorder(self.store, self.models, self.deps.saver))

    async def send(self, *wire: tuple[str, dict]) -> list[str]:
        """Deliver one batch of (subject, body); the rejection reasons."""
        commands = [decode_command(subject, json.dumps(body, default=str).encode()) for subject, body in wire]
        return [r.reason for r in await self.handler.on_chat_batch(items(commands))]


def created(i: int, content: str | None = None, bots=("bard",), conversation: str = C) -> tuple[str, dict]:
    return subjects.MESSAGE_CREATED, {
        "tenant_id": T, "user_id": U, "conversation_id": conversation, "message_id": f"m{i}",
        "role": "user" if i % 2 == 0 else "assistant", "author_name": "Ana" if i % 2 == 0 else "Bard",
        "content": content or f"line {i}", "created_at": T0 + timedelta(minutes=i), "bot_ids": list(bots),
    }  # fmt: skip


def edited(message_id: str, content: str) -> tuple[str, dict]:
    return subjects.MESSAGE_EDITED, {
        "tenant_id": T, "user_id": U, "conversation_id": C, "message_id": message_id, "content": content,
        "edited_at": T0 + timedelta(hours=1),
    }  # fmt: skip


def deleted(message_id: str) -> tuple[str, dict]:
    return subjects.MESSAGE_DELETED, {
        "tenant_id": T, "user_id": U, "conversation_id": C, "message_id": message_id, "deleted_at": T0 + timedelta(hours=2),
    }  # fmt: skip


@pytest.fixture
def ingest() -> Ingest:
    return Ingest()


async def test_a_message_is_recorded_projected_and_published(ingest):
    assert await ingest.send(created(0, "We landed at dawn.")) == []

    (event,) = await ingest.store.read_stream(STREAM)
    assert (event.type, event.version, event.payload["content"], event.payload["index"]) == (
        "message.recorded", 1, "We landed at dawn.", 0,
    )  # fmt: skip
    (line,) = await ingest.models.recent(T, U, C, 10)
    assert (line.message_id, line.content, line.bot_ids) == ("m0", "We landed at dawn.", ["bard"])
    assert [e.event_id for e in published(ingest.deps).events] == [event.event_id]


async def test_a_redelivered_message_is_recorded_once(ingest):
    await ingest.send(created(0), created(1))
    published(ingest.deps).take()

    assert await ingest.send(created(1), created(0)) == []  # redelivered, in another order
    assert await ingest.send(created(1)) == []

    assert await ingest.store.stream_version(STREAM) == 2
    assert [m.message_id for m in await ingest.models.recent(T, U, C, 10)] == ["m0", "m1"]
    assert published(ingest.deps).events == []
    state = await ingest.models.conversation(T, U, C)
    assert state is not None
    assert (state.message_count, state.version) == (2, 2)


async def test_messages_take_indexes_in_delivery_order_across_batches(ingest):
    await ingest.send(created(0), created(1))
    await ingest.send(created(2), created(3, bots=("bard", "rook")))

    lines = await ingest.models.recent(T, U, C, 10)
    assert [(m.message_id, m.index) for m in lines] == [("m0", 0), ("m1", 1), ("m2", 2), ("m3", 3)]
    assert [m.message_id for m in await ingest.models.recent(T, U, C, 10, visible_to="rook")] == ["m3"]


async def test_edits_and_deletes_change_the_projection_and_keep_the_log(ingest):
    await ingest.send(created(0), created(1))

    assert await ingest.send(edited("m0", "We landed at dusk."), deleted("m1")) == []

    assert [(m.message_id, m.content) for m in await ingest.models.recent(T, U, C, 10)] == [
        ("m0", "We landed at dusk.")
    ]
    types = [e.type for e in await ingest.store.read_stream(STREAM)]
    assert types == ["message.recorded", "message.recorded", "message.edited", "message.deleted"]
    assert await ingest.send(edited("m0", "We landed at dusk.")) == [], "the same edit again changes nothing"
    assert await ingest.store.stream_version(STREAM) == 4


async def test_an_edit_of_an_unknown_message_is_refused_with_the_reason(ingest):
    await ingest.send(created(0))

    reasons = await ingest.send(edited("m9", "never said"), created(1))

    assert len(reasons) == 1
    assert "m9" in reasons[0]
    assert [m.message_id for m in await ingest.models.recent(T, U, C, 10)] == ["m0", "m1"], "the rest is recorded"


async def test_bot_and_persona_profiles_are_projected(ingest):
    bot = {"tenant_id": T, "bot_id": "bard", "name": "Bard", "system_prompt": "Sing.", "updated_at": T0}
    persona = {"tenant_id": T, "user_id": U, "persona_id": "ana", "name": "Ana", "description": "a sailor",
               "traits": ["brave"], "updated_at": T0}  # fmt: skip

    assert await ingest.send((subjects.BOT_UPSERTED, bot), (subjects.PERSONA_UPSERTED, persona)) == []
    assert (
        await ingest.send(
            (subjects.BOT_UPSERTED, bot | {"name": "Bard the Second", "updated_at": T0 + timedelta(days=1)})
        )
        == []
    )

    view = await ingest.models.bot(T, "bard")
    assert view is not None
    assert (view.name, view.system_prompt) == ("Bard the Second", "Sing.")
    ana = await ingest.models.persona(T, U, "ana")
    assert ana is not None
    assert (ana.name, ana.traits) == ("Ana", ["brave"])


def test_a_payload_the_wire_model_refuses_is_an_invalid_message():
    with pytest.raises(InvalidMessage, match="content"):
        decode_command(subjects.MESSAGE_CREATED, json.dumps({**created(0)[1], "content": None}, default=str).encode())
    with pytest.raises(InvalidMessage, match="unknown subject"):
        decode_command("mnemo.chat.nope.v1", b"{}")


async def test_times_at_the_ends_of_the_calendar_are_recorded(ingest):
    # The fuzz suite's edge times: in range in UTC, so recorded (one out of range is refused at decode).
    first = {**created(0)[1], "created_at": "0001-01-01T00:00:00Z"}
    last = {**created(1)[1], "created_at": "9999-12-31T23:59:59.999999Z"}
    assert await ingest.send((subjects.MESSAGE_CREATED, first), (subjects.MESSAGE_CREATED, last)) == []
    assert await ingest.send(edited("m1", "later"), deleted("m0")) == []
    assert [e.type for e in await ingest.store.read_stream(STREAM)][:2] == ["message.recorded", "message.recorded"]
    with pytest.raises(InvalidMessage, match="created_at: Value error, out of range in UTC"):
        decode_command(
            subjects.MESSAGE_CREATED, json.dumps({**first, "created_at": "0001-01-01T00:00:00+05:45"}).encode()
        )


async def test_a_failed_projection_hands_the_recorded_message_to_the_relay_at_once(ingest, monkeypatch):
    """Committed, then the read model failed: no fast-path publish follows, so the relay's recovery round
    lists the event at once instead of holding it for ``grace_s`` as if its publish were on its way."""

    async def read_model_down(*_args, **_kwargs):
        raise ConnectionError("the read model is down")

    monkeypatch.setattr(ingest.models, "apply", read_model_down)
    with pytest.raises(ConnectionError):
        await ingest.send(created(0))

    (event,) = await ingest.store.read_stream(STREAM)
    assert await ingest.store.unpublished(min_age_s=0, limit=10, grace_s=60) == [event]
