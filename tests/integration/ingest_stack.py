"""Real service routers (ingest, embedding, ...) on the session's nats-server and SecantusDB, for integration tests.

The JetStream streams are shared by the test session, so ``reset_streams`` recreates them first: each test
then sees only what it publishes, and consumers start from nothing.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import nats
from faststream.nats import NatsBroker, NatsRouter
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.api import RawStreamMsg
from nats.js.errors import NotFoundError
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

from shared import subjects
from shared.broker import ensure_streams, start_broker
from shared.crypto import FieldCipher
from shared.embedders.port import Embedder
from shared.eventlog.codec import EventCodec
from shared.eventlog.keystore import MongoKeyStore
from shared.eventlog.mongo import MongoEventStore
from shared.eventlog.relay import NatsJetStreamPublisher, Relay
from shared.events.recorded import REGISTRY
from shared.runtime import Deps
from shared.settings import DeliverySettings, Settings
from shared.vectors.port import VectorIndex


async def reset_streams(js: JetStreamContext) -> None:
    """Delete and recreate the streams: a purge would keep the ``Nats-Msg-Id`` dedupe window, and the
    deterministic event ids of one test would then silently swallow the same ids published by the next."""
    for stream in (subjects.CHAT_STREAM, subjects.LOG_STREAM, subjects.DLQ_STREAM):
        with contextlib.suppress(NotFoundError):
            await js.delete_stream(stream)
    await ensure_streams(js)


async def dead_letters(js: JetStreamContext, service: str) -> list[RawStreamMsg]:
    """Every dead letter of ``service`` in the DLQ stream, read by sequence (no consumer to time out)."""
    state = (await js.stream_info(subjects.DLQ_STREAM)).state
    letters = [await js.get_msg(subjects.DLQ_STREAM, seq) for seq in range(state.first_seq, state.last_seq + 1)]
    return [m for m in letters if m.subject == subjects.dead_letter_subject(service)]


async def drained(js: JetStreamContext, stream: str, durable: str) -> bool:
    """Every message in ``stream`` so far was delivered to ``durable`` and acked."""
    with contextlib.suppress(NotFoundError):
        info = await js.consumer_info(stream, durable)
        last = (await js.stream_info(stream)).state.last_seq
        return bool(info.ack_floor.stream_seq >= last and info.num_ack_pending == 0 and info.num_pending == 0)
    return False


@dataclass
class Stack:
    deps: Deps
    nc: NatsClient
    js: JetStreamContext
    db: AsyncDatabase[dict[str, Any]]
    store: MongoEventStore
    codec: EventCodec
    relay: Relay


@contextlib.asynccontextmanager
async def running(
    nats_url: str,
    mongo_url: str,
    db_name: str,
    create_router: Callable[[Deps], NatsRouter] | Sequence[Callable[[Deps], NatsRouter]],
    *,
    vectors: VectorIndex | None = None,
    embedder: Embedder | None = None,
) -> AsyncIterator[Stack]:
    settings = Settings(
        nats_url=nats_url,
        mongodb_url=mongo_url,
        mongodb_db=db_name,
        delivery=DeliverySettings(max_deliver=3, ack_wait_s=10.0, batch_size=64),
    )
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongo_url, tz_aware=True)
    db = client[db_name]
    cipher = FieldCipher(os.urandom(32), MongoKeyStore(db))
    codec = EventCodec(REGISTRY, cipher)
    store = MongoEventStore(db, codec)
    await store.ensure_indexes()
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    await reset_streams(js)
    relay = Relay(store, NatsJetStreamPublisher(js), codec)
    broker = NatsBroker(nats_url)
    deps = Deps(settings, broker, db, store, codec, relay, cipher, vectors, embedder)
    for factory in create_router if isinstance(create_router, Sequence) else [create_router]:
        broker.include_router(factory(deps))
    await start_broker(broker)  # returns once the server has the subscriptions (no 'no responders')
    try:
        yield Stack(deps, nc, js, db, store, codec, relay)
    finally:
        await broker.stop()
        await nc.drain()
        await client.drop_database(db_name)
        await client.close()
