"""A log consumer's durable filters the event types of its handler table, and a durable made by an older
version on every log event (``mnemo.log.>``) is narrowed at start without losing or repeating what it held
(docs/operations.md, "Changing a durable's filter"). Real nats-server, one of its own per test: the stream's
consumers are the test's."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Collection
from datetime import UTC, datetime
from pathlib import Path

import nats
import pytest
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from mnemo.runtime.servers import free_port, start_nats
from mnemo.shared import subjects
from mnemo.shared.broker import filters_of, make_broker, start_broker
from mnemo.shared.consumers import log_consumer_router
from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore
from mnemo.shared.delivery import Item, Rejection
from mnemo.shared.eventlog.codec import EventCodec
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import REGISTRY, MessageDeletionRecorded, SummaryRetired
from mnemo.shared.settings import Settings
from mnemo.shared.streams import ensure_streams
from mnemo.shared.subscriptions import Delivered, EventHandlers
from tests.components import deps

pytestmark = pytest.mark.integration

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SERVICE = "filter-probe"


class CountingCodec:
    """The codec, counting the events it decodes by type (what a consumer pays to look at an event)."""

    def __init__(self, codec: EventCodec) -> None:
        self.codec = codec
        self.decoded: list[str] = []

    async def from_wire(self, data: bytes, decrypt: Collection[str] | None = None) -> EventEnvelope:
        env = await self.codec.from_wire(data, decrypt)
        self.decoded.append(env.type)
        return env


def event(n: int, type_name: str) -> EventEnvelope:
    payloads = {
        "message.deleted": {"user_id": "u", "conversation_id": "c", "message_id": f"m{n}", "deleted_at": T0},
        "summary.retired": {"summary_id": f"s{n}", "user_id": "u", "conversation_id": "c", "reason": "deleted",
                            "retired_at": T0},
        "lorebook.created": {"lorebook_id": f"b{n}", "owner_user_id": "u", "name": "A secret name",
                             "created_at": T0},
        "knowledge.witnessed": {"character_id": "bot", "character_kind": "bot", "user_id": "u",
                                "conversation_id": "c", "message_ids": [f"m{n}"], "first_index": n, "last_index": n},
    }  # fmt: skip
    return EventEnvelope(
        event_id=f"e{n}", type=type_name, schema_version=REGISTRY.get(type_name).schema_version,
        stream_id=f"s/{n}", version=1, tenant_id="t", occurred_at=T0, recorded_at=T0,
        payload=payloads[type_name],
    )  # fmt: skip


async def test_an_unfiltered_durable_is_narrowed_to_its_table_and_nothing_is_lost(tmp_path: Path) -> None:
    server = start_nats(tmp_path, port=free_port())
    nc = await nats.connect(server.url)
    broker = None
    try:
        settings = Settings(nats_url=server.url, data_dir=tmp_path)
        settings = settings.model_copy(update={"delivery": settings.delivery.model_copy(update={"ack_wait_s": 2.0})})
        js = nc.jetstream()
        await ensure_streams(js, settings.streams)
        codec = EventCodec(REGISTRY, FieldCipher(os.urandom(32), InMemoryKeyStore()))
        kinds = ["message.deleted", "knowledge.witnessed", "summary.retired", "lorebook.created"]
        log = [event(n, kinds[n % 4]) for n in range(16)]
        for env in log:
            wire = EventCodec.to_wire(await codec.encode(env))
            await js.publish(subjects.log_subject(env.type), wire, headers={"Nats-Msg-Id": env.event_id})

        # What an older version left: a durable on every log event, 2 messages acked, 3 delivered and never acked.
        durable = subjects.durable(SERVICE)
        old = ConsumerConfig(
            name=durable, durable_name=durable, filter_subject=subjects.LOG_ALL, ack_policy=AckPolicy.EXPLICIT,
            ack_wait=2.0, deliver_policy=DeliverPolicy.ALL, max_deliver=10,
        )  # fmt: skip
        await js.add_consumer(subjects.LOG_STREAM, config=old)
        replica = await js.pull_subscribe_bind(durable, stream=subjects.LOG_STREAM)
        delivered = await replica.fetch(5, timeout=5)
        for msg in delivered[:2]:
            await msg.ack()
        await replica.unsubscribe()
        done_before = {f"e{n}" for n in (0, 1)}

        handled: list[str] = []

        def on_event(context: None, item: Delivered[MessageDeletionRecorded | SummaryRetired]) -> None:
            handled.append(item.envelope.event_id)

        table = EventHandlers[None]().on(MessageDeletionRecorded, on_event).on(SummaryRetired, on_event)

        async def handle(items: list[Item[EventEnvelope]]) -> list[Rejection]:
            return await table.dispatch(None, items)

        counting = CountingCodec(codec)
        broker = make_broker(settings, SERVICE)
        d = dataclasses.replace(deps(), settings=settings, broker=broker, codec=counting)
        broker.include_router(log_consumer_router(d, service=SERVICE, handlers=table, handle=handle, title="probe"))
        await start_broker(broker)

        info = await js.consumer_info(subjects.LOG_STREAM, durable)
        assert filters_of(info.config) == table.filter_subjects()
        assert info.config.filter_subject in (None, ""), "the old catch-all filter is gone"

        wanted = {e.event_id for e in log if e.type in table.types} - done_before
        for _ in range(200):
            info = await js.consumer_info(subjects.LOG_STREAM, durable)
            if set(handled) >= wanted and not info.num_pending and not info.num_ack_pending:
                break
            await asyncio.sleep(0.1)
        assert sorted(handled) == sorted(wanted), "each handled event not acked before is handled once"
        assert set(counting.decoded) <= table.types, "an event it does not handle is never decoded"
        dead = await js.stream_info(subjects.DLQ_STREAM)
        assert dead.state.messages == 0
    finally:
        if broker is not None:
            await broker.stop()
        await nc.close()
        server.stop()


async def test_a_durable_made_now_filters_its_table_from_the_start(tmp_path: Path) -> None:
    server = start_nats(tmp_path, port=free_port())
    broker = None
    nc = await nats.connect(server.url)
    try:
        settings = Settings(nats_url=server.url, data_dir=tmp_path)
        await ensure_streams(nc.jetstream(), settings.streams)

        def ignore(context: None, item: Delivered[MessageDeletionRecorded]) -> None:
            return None

        table = EventHandlers[None]().on(MessageDeletionRecorded, ignore).on(SummaryRetired, ignore)

        async def handle(items: list[Item[EventEnvelope]]) -> list[Rejection]:
            return await table.dispatch(None, items)

        broker = make_broker(settings, SERVICE)
        d = dataclasses.replace(deps(), settings=settings, broker=broker)
        broker.include_router(log_consumer_router(d, service=SERVICE, handlers=table, handle=handle, title="probe"))
        await start_broker(broker)
        info = await nc.jetstream().consumer_info(subjects.LOG_STREAM, subjects.durable(SERVICE))
        assert info.config.filter_subjects == table.filter_subjects()
    finally:
        if broker is not None:
            await broker.stop()
        await nc.close()
        server.stop()
