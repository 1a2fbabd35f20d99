"""Real service routers (ingest, embedding, ...) on the session's nats-server and SecantusDB, for integration tests.

The JetStream streams are shared by the test session, so ``reset_streams`` recreates them first: each test
then sees only what it publishes, and consumers start from nothing.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from faststream.nats import NatsBroker, NatsRouter
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.api import RawStreamMsg
from nats.js.errors import NotFoundError
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

from mnemo.shared import subjects
from mnemo.shared.broker import ensure_streams, start_broker
from mnemo.shared.crypto import FieldCipher
from mnemo.shared.deps import Deps
from mnemo.shared.embedders.port import Embedder
from mnemo.shared.eventlog.codec import EventCodec
from mnemo.shared.eventlog.keystore import MongoKeyStore
from mnemo.shared.eventlog.mongo import MongoEventStore
from mnemo.shared.eventlog.relay import Relay
from mnemo.shared.readmodels.catalog import ensure_indexes
from mnemo.shared.settings import DeliverySettings, LimitsSettings, Settings
from mnemo.shared.vectors.edge import EdgeVectorIndex
from mnemo.shared.vectors.port import VectorIndex
from tests.integration.event_log import connect


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
    if not state.messages:
        return []  # an empty stream's first sequence is 0, which JetStream refuses to read
    letters = [await js.get_msg(subjects.DLQ_STREAM, seq) for seq in range(state.first_seq, state.last_seq + 1)]
    return [m for m in letters if m.subject == subjects.dead_letter_subject(service)]


async def drained(js: JetStreamContext, stream: str, durable: str) -> bool:
    """Every message in ``stream`` so far that ``durable`` filters was delivered to it and acked (a log
    consumer's durable filters the types it handles: the others never count)."""
    with contextlib.suppress(NotFoundError):
        info = await js.consumer_info(stream, durable)
        return bool(info.num_ack_pending == 0 and info.num_pending == 0)
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


Routers = Callable[[Deps], NatsRouter] | Sequence[Callable[[Deps], NatsRouter]]


@contextlib.asynccontextmanager
async def running(
    nats_url: str,
    mongo_url: str,
    db_name: str,
    create_router: Routers,
    *,
    vectors: VectorIndex | None = None,
    embedder: Embedder | None = None,
    kek: bytes | None = None,
    limits: LimitsSettings | None = None,
    streams: Callable[[JetStreamContext], Awaitable[None]] = reset_streams,
) -> AsyncIterator[Stack]:
    """``kek``: the key-encryption key, when service processes started by the test must share it; ``limits``:
    the tenants' limits (``MNEMO_LIMITS__*``), the defaults when not given; ``streams``: prepares the streams
    (recreated empty by default; ``ensure_streams`` keeps what a test published before the services start)."""
    settings = Settings(
        nats_url=nats_url,
        mongodb_url=mongo_url,
        mongodb_db=db_name,
        delivery=DeliverySettings(max_deliver=3, ack_wait_s=10.0, batch_size=64),
        limits=limits or LimitsSettings(),
    )
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongo_url, tz_aware=True)
    db = client[db_name]
    keys = MongoKeyStore(db)
    cipher = FieldCipher(kek or os.urandom(32), keys)
    log = await connect(db, nats_url, cipher, streams)
    # The indexes a real start creates (mnemo/shared/bootstrap.open_core, mnemo/runtime/stack.py): without them every
    # tenant-scoped query reads the whole collection, and long runs (make fuzz) slow down as the data grows.
    await keys.ensure_indexes()
    await ensure_indexes(db)
    broker = NatsBroker(nats_url)
    deps = Deps(settings, broker, db, log.store, log.codec, log.relay, cipher, vectors, embedder, nc=log.nc)
    for factory in create_router if isinstance(create_router, Sequence) else [create_router]:
        broker.include_router(factory(deps))
    await start_broker(broker)  # returns once the server has the subscriptions (no 'no responders')
    for begin in deps.on_started:
        await begin()
    try:
        yield Stack(deps, log.nc, log.js, db, log.store, log.codec, log.relay)
    finally:
        for stop in deps.on_stopping:
            await stop()
        await broker.stop()
        await log.nc.drain()
        await client.drop_database(db_name)
        await client.close()


StackFactory = Callable[[Routers], contextlib.AbstractAsyncContextManager[Stack]]


@contextlib.asynccontextmanager
async def running_with_vectors(
    nats_url: str,
    mongo_url: str,
    db_name: str,
    create_router: Routers,
    path: Path,
    embedder: Embedder,
) -> AsyncIterator[Stack]:
    """:func:`running` with a Qdrant Edge index at ``path`` sized for ``embedder``, closed afterwards."""
    index = EdgeVectorIndex(path, "vectors")
    await index.ensure_collection(embedder.dimensions)
    try:
        async with running(nats_url, mongo_url, db_name, create_router, vectors=index, embedder=embedder) as s:
            yield s
    finally:
        await index.close()


def message_created(message_id: str, content: str, created_at: datetime, **fields: Any) -> dict[str, Any]:
    """A ``message.created`` body in conversation c1 of user u1 (tenant t1): Sir Ann (author ``knight``)
    writes in a scene with the bot ``eli``; ``fields`` add to it or replace."""
    return {
        "tenant_id": "t1",
        "user_id": "u1",
        "conversation_id": "c1",
        "message_id": message_id,
        "role": "user",
        "author_id": "knight",
        "author_name": "Sir Ann",
        "content": content,
        "created_at": created_at.isoformat(),
        "bot_ids": ["eli"],
        **fields,
    }
