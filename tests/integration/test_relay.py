"""The outbox relay against the real nats-server (JetStream) and SecantusDB.

The MNEMO_LOG stream is shared by the whole test session, so each test filters what it reads by its own
event ids (unique per test).
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NatsClient
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from pymongo import AsyncMongoClient
from pymongo.errors import AutoReconnect

from bench.chaos_checks import unrelayed
from mnemo.shared import subjects
from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore
from mnemo.shared.eventlog.codec import EventCodec
from mnemo.shared.eventlog.mongo import MongoEventStore
from mnemo.shared.eventlog.port import Append, ConcurrencyError
from mnemo.shared.eventlog.relay import MSG_ID_HEADER, NatsJetStreamPublisher, Outgoing, Relay, ensure_log_stream
from mnemo.shared.events.envelope import EventEnvelope, NewEvent
from mnemo.shared.events.recorded import REGISTRY, conversation_stream
from mnemo.shared.jetstream import jetstream

pytestmark = pytest.mark.integration


def message(i: int, conv: str) -> NewEvent:
    return NewEvent(
        type="message.recorded",
        tenant_id="t1",
        payload={
            "user_id": "u1",
            "conversation_id": conv,
            "message_id": f"m{i}",
            "role": "user",
            "author_id": None,
            "author_name": "Alice",
            "content": f"the password is swordfish-{i}",
            "created_at": datetime(2024, 1, 1, tzinfo=UTC),
            "bot_ids": [],
            "persona_id": None,
            "index": i,
            "tokens": 5,
        },
    )


@pytest.fixture
async def js(nats_url: str) -> AsyncIterator[JetStreamContext]:
    nc: NatsClient = await nats.connect(nats_url)
    ctx = jetstream(nc)
    await ensure_log_stream(ctx)
    try:
        yield ctx
    finally:
        await nc.drain()


@pytest.fixture
async def store(mongo_url: str) -> AsyncIterator[MongoEventStore]:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongo_url)
    name = f"t_{uuid.uuid4().hex[:12]}"
    s = MongoEventStore(client[name], EventCodec(REGISTRY, FieldCipher(os.urandom(32), InMemoryKeyStore())))
    await s.ensure_indexes()
    try:
        yield s
    finally:
        await client.drop_database(name)
        await client.close()


async def relayed(js: JetStreamContext, ids: set[str]) -> list[Any]:
    """Every message in MNEMO_LOG whose Nats-Msg-Id is one of ``ids`` (an ephemeral consumer from the start)."""
    sub = await js.pull_subscribe(subjects.log_subject("message.recorded"), stream=subjects.LOG_STREAM)
    out: list[Any] = []
    try:
        while True:
            try:
                batch = await sub.fetch(500, timeout=0.5)
            except NatsTimeoutError:
                return out
            out += [m for m in batch if (m.headers or {}).get(MSG_ID_HEADER) in ids]
    finally:
        await sub.unsubscribe()


async def test_ensure_log_stream_is_idempotent_and_configured(js: JetStreamContext) -> None:
    await ensure_log_stream(js)
    info = await js.stream_info(subjects.LOG_STREAM)

    assert info.config.subjects == list(subjects.LOG_STREAM_SUBJECTS)
    assert info.config.duplicate_window == subjects.DUPLICATE_WINDOW_S


async def test_events_committed_but_never_published_are_published_by_recovery(
    js: JetStreamContext, store: MongoEventStore
) -> None:
    conv = uuid.uuid4().hex
    result = await store.append(conversation_stream("t1", "u1", conv), 0, [message(i, conv) for i in range(3)])
    # The appender "crashed" here: publish_committed was never called, and another process recovers (the
    # appender's own relay would leave them to its fast path for ``grace_s``; a dead one's recovery never beat).
    survivor = MongoEventStore(store.events.database, store.codec)
    relay = Relay(survivor, NatsJetStreamPublisher(js), store.codec, min_age_s=0.0, interval_s=0.05)

    task = asyncio.create_task(relay.run())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # polling the log: there is nothing to wait on but the store
        if not await store.unpublished(0, 10):
            break
        await asyncio.sleep(0.05)
    await relay.stop()
    await asyncio.wait_for(task, 5)

    assert await store.unpublished(0, 10) == []
    msgs = await relayed(js, {e.event_id for e in result.committed})
    decoded = [await store.codec.from_wire(m.data) for m in msgs]
    assert sorted(decoded, key=lambda e: e.version) == result.committed


async def test_another_writers_events_wait_while_its_recovery_loop_beats(store: MongoEventStore) -> None:
    """Two processes on one log: the survivor's recovery leaves the writer's unconfirmed events to the writer
    while the writer's own recovery loop beats, and takes them once it stops (the writer died)."""
    conv = uuid.uuid4().hex
    result = await store.append(conversation_stream("t1", "u1", conv), 0, [message(i, conv) for i in range(2)])
    survivor = MongoEventStore(store.events.database, store.codec)
    await asyncio.sleep(0.3)

    assert await store.unpublished(0.25, 10, grace_s=60) == []  # the writer's round: it beats, its own in flight
    assert await survivor.unpublished(0.25, 10, grace_s=60) == []  # the writer is alive: left to it
    await asyncio.sleep(0.6)  # the writer's loop is silent for twice min_age_s: it died
    assert await survivor.unpublished(0.25, 10, grace_s=60) == result.committed


async def test_an_append_that_fails_after_its_commit_goes_to_recovery_at_once(
    store: MongoEventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database went away after the insert (``make chaos`` kills SecantusDB): the appender sees an error,
    so no fast-path publish follows, and its own recovery round must not hold the committed events for
    ``grace_s`` as if one did."""
    conv = uuid.uuid4().hex
    insert_many = store.events.insert_many

    async def insert_then_lose_the_connection(*args: Any, **kwargs: Any) -> Any:
        await insert_many(*args, **kwargs)
        raise AutoReconnect("connection reset by peer")

    monkeypatch.setattr(store.events, "insert_many", insert_then_lose_the_connection)
    with pytest.raises(AutoReconnect):
        await store.append_batch([Append(conversation_stream("t1", "u1", conv), 0, [message(0, conv)])])
    monkeypatch.undo()

    recovered = await store.unpublished(0, 10, grace_s=60)
    assert [e.payload["message_id"] for e in recovered] == ["m0"]


async def test_events_a_writer_lost_a_race_on_are_recovered_once_another_commits_them(store: MongoEventStore) -> None:
    """Two ingest replicas on one conversation (a partition changing hands): the first intends the events but
    loses its race, the second commits them and its publish fails. The first writer's intent comes first, so
    the second leaves them to it while its loop beats; the first, which got no fast path for them, must take
    them in its next round, not hold them as its own in flight for ``grace_s``."""
    conv = uuid.uuid4().hex
    sid = conversation_stream("t1", "u1", conv)
    taken, events = [message(0, conv)], [message(1, conv), message(2, conv)]
    await store.append(sid, 0, taken)
    await store.mark_published([e.event_id for e in taken])
    first = MongoEventStore(store.events.database, store.codec)
    with pytest.raises(ConcurrencyError):
        await first.append(sid, 0, events)
    second = MongoEventStore(store.events.database, store.codec)
    committed = (await second.append(sid, 1, events)).committed
    await second.publish_failed([e.event_id for e in committed])

    await asyncio.sleep(1.05)  # past min_age_s; a beat then counts as alive for twice that

    assert await first.unpublished(1.0, 10, grace_s=60) == committed  # its loop's round (a beat)
    assert await second.unpublished(1.0, 10, grace_s=60) == []  # the first writer is alive: left to it


async def test_publishing_twice_stores_one_jetstream_message_per_event(
    js: JetStreamContext, store: MongoEventStore
) -> None:
    conv = uuid.uuid4().hex
    result = await store.append(conversation_stream("t1", "u1", conv), 0, [message(i, conv) for i in range(2)])
    relay = Relay(store, NatsJetStreamPublisher(js), store.codec, min_age_s=0.0)

    await relay.publish_committed(result.committed)
    await relay.publish_committed(result.committed)  # e.g. a redelivered inbound message
    await store.receipts.delete_many({})  # the confirmations were lost: recovery republishes
    assert await relay.recover_once() == 2

    msgs = await relayed(js, {e.event_id for e in result.committed})
    assert sorted(m.headers[MSG_ID_HEADER] for m in msgs) == sorted(e.event_id for e in result.committed)
    assert all(m.subject == "mnemo.log.message.recorded.v1" for m in msgs)


async def test_jetstream_holds_ciphertext_that_consumers_decode(js: JetStreamContext, store: MongoEventStore) -> None:
    conv = uuid.uuid4().hex
    result = await store.append(conversation_stream("t1", "u1", conv), 0, [message(7, conv)])
    await Relay(store, NatsJetStreamPublisher(js), store.codec).publish_committed(result.committed)

    [msg] = await relayed(js, {result.committed[0].event_id})

    assert b"swordfish" not in msg.data
    env: EventEnvelope = await store.codec.from_wire(msg.data)
    assert env.payload["content"] == "the password is swordfish-7"
    assert env == result.committed[0]
    assert await store.unpublished(0, 10) == []


class FailingPublisher:
    def __init__(self, fail_ids: set[str]) -> None:
        self.fail_ids = fail_ids
        self.sent: list[str] = []

    async def publish_all(self, messages: Sequence[Outgoing]) -> list[BaseException | None]:
        self.sent += [m.msg_id for m in messages if m.msg_id not in self.fail_ids]
        return [ConnectionError("nats down") if m.msg_id in self.fail_ids else None for m in messages]


async def test_failed_publishes_stay_unpublished_for_recovery(store: MongoEventStore) -> None:
    conv = uuid.uuid4().hex
    result = await store.append(conversation_stream("t1", "u1", conv), 0, [message(i, conv) for i in range(3)])
    bad = result.committed[1].event_id
    publisher = FailingPublisher({bad})

    await Relay(store, publisher, store.codec).publish_committed(result.committed)  # does not raise

    assert [e.event_id for e in await store.unpublished(0, 10)] == [bad]
    publisher.fail_ids.clear()
    assert await Relay(store, publisher, store.codec, min_age_s=0).recover_once() == 1
    assert await store.unpublished(0, 10) == []


async def test_the_nats_publisher_reports_each_message_that_jetstream_did_not_take(js: JetStreamContext) -> None:
    stored = Outgoing("mnemo.log.message.recorded.v1", b"{}", f"ok-{uuid.uuid4().hex}")
    nowhere = Outgoing(f"no.stream.{uuid.uuid4().hex}", b"{}", f"lost-{uuid.uuid4().hex}")  # no stream takes it

    outcomes = await NatsJetStreamPublisher(js, timeout=2.0).publish_all([stored, nowhere, stored])

    assert outcomes[0] is None
    assert outcomes[2] is None
    assert isinstance(outcomes[1], Exception)


async def test_the_chaos_check_names_committed_events_that_no_receipt_confirms(store: MongoEventStore) -> None:
    """``make chaos``'s ``unrelayed``: an event in the log without a receipt is named; a published one, or one an
    intent named but no append committed (a lost race), is not."""
    conv = uuid.uuid4().hex
    sid = conversation_stream("t1", "u1", conv)
    result = await store.append(sid, 0, [message(i, conv) for i in range(3)])
    with pytest.raises(ConcurrencyError):
        await store.append(sid, 0, [message(9, conv)])
    await store.mark_published([result.committed[1].event_id])

    named = await unrelayed(store)

    assert [line.split()[-2:] for line in named] == [
        [f"{sid}@1", result.committed[0].event_id],
        [f"{sid}@3", result.committed[2].event_id],
    ]
    assert all(line.split()[1] == "message.recorded" for line in named)
