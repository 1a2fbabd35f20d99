"""The real event log (SecantusDB) and relay (nats-server) for tests that drive a handler with the very
envelopes the log holds, the way the relay would deliver them, and for replays of it (``replay_twice``).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import nats
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from mnemo.runtime.replay import replay
from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore
from mnemo.shared.delivery import Item
from mnemo.shared.eventlog.codec import EventCodec
from mnemo.shared.eventlog.mongo import MongoEventStore
from mnemo.shared.eventlog.relay import NatsJetStreamPublisher, Relay, ensure_log_stream
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import REGISTRY
from mnemo.shared.jetstream import jetstream
from mnemo.shared.settings import Settings


@dataclass(frozen=True)
class EventLog:
    store: MongoEventStore
    codec: EventCodec
    relay: Relay
    cipher: FieldCipher
    nc: NatsClient
    js: JetStreamContext


async def connect(
    db: Any,
    nats_url: str,
    cipher: FieldCipher,
    streams: Callable[[JetStreamContext], Awaitable[None]] = ensure_log_stream,
) -> EventLog:
    """A store on ``db`` with its indexes, and a relay to JetStream once ``streams`` prepared it; the caller
    drains ``nc``."""
    codec = EventCodec(REGISTRY, cipher)
    store = MongoEventStore(db, codec)
    await store.ensure_indexes()
    nc = await nats.connect(nats_url)
    js = jetstream(nc)
    await streams(js)
    return EventLog(store, codec, Relay(store, NatsJetStreamPublisher(js), codec), cipher, nc, js)


@asynccontextmanager
async def event_log(db: Any, nats_url: str) -> AsyncIterator[EventLog]:
    """:func:`connect` with the log stream and a cipher with a key of its own; drained on the way out."""
    log = await connect(db, nats_url, FieldCipher(os.urandom(32), InMemoryKeyStore()))
    try:
        yield log
    finally:
        await log.nc.drain()


def items(envelopes: list[EventEnvelope]) -> list[Item[EventEnvelope]]:
    """The envelopes as a delivered batch."""
    return [Item(e, None) for e in envelopes]  # type: ignore[arg-type]  # msg is only read for rejections


async def replay_twice(settings: Settings, events: int) -> None:
    """``mnemo replay`` (not embedded) twice over the same log: each run replays ``events`` events, and the
    second rebuilds the same state as the first."""
    assert await replay(settings, embedded=False) == events
    assert await replay(settings, embedded=False) == events, "a second replay rebuilds the same state"
