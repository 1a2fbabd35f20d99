"""The context-assembler's kept reads hear the relayed log on a real nats-server, and never answer it.

The relay publishes each event to JetStream, so the message carries the inbox its PubAck goes to; a subscriber
that replied there (FastStream replies to every message with a reply subject unless told not to) would hand the
relay an empty "ack" before the stream's own, which it reads as a failed publish and publishes again.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import nats
import pytest
from faststream.nats import NatsBroker, NatsRouter
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from mnemo.services.context_assembler.app import hear_changes
from mnemo.services.context_assembler.gather.cache import LogCache
from mnemo.services.context_assembler.gather.invalidations import SUBJECTS, facts_topic, summaries_topic
from mnemo.shared.broker import make_broker, start_broker
from mnemo.shared.events.recorded import FACT_LEARNED, SUMMARY_CREATED
from mnemo.shared.settings import Settings
from mnemo.shared.subjects import log_subject
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


@pytest.fixture
async def hearing(nats_url: str) -> AsyncIterator[tuple[LogCache, NatsClient]]:
    cache = LogCache(settle_s=0.0)
    broker: NatsBroker = make_broker(Settings(nats_url=nats_url), "context-assembler")
    router = NatsRouter()
    hear_changes(router, cache)
    broker.include_router(router)
    await start_broker(broker)
    nc = await nats.connect(nats_url)
    try:
        yield cache, nc
    finally:
        await nc.drain()
        await broker.stop()


def envelope(event_type: str, stream_id: str) -> bytes:
    return json.dumps({"type": event_type, "tenant_id": "t1", "stream_id": stream_id}).encode()


async def test_a_relayed_change_drops_the_kept_read_and_gets_no_reply(hearing: tuple[LogCache, NatsClient]) -> None:
    cache, nc = hearing
    reads: list[str] = []

    async def read() -> str:
        reads.append("read")
        return "facts"

    await cache.read("facts-key", [facts_topic("t1")], read)
    await cache.read("summaries-key", [summaries_topic("t1", "u1")], read)
    assert len(reads) == 2
    assert len(cache) == 2
    for event_type, stream_id in ((FACT_LEARNED.name, "facts/t1/u1/b1"), (SUMMARY_CREATED.name, "summaries/t1/u1/c1")):
        assert log_subject(event_type) in SUBJECTS
        # What the relay's JetStream publish looks like to a core subscriber: a body and a reply inbox.
        answers: list[bytes] = []

        async def heard(msg: Msg, answers: list[bytes] = answers) -> None:
            answers.append(msg.data)

        inbox = nc.new_inbox()
        replies = await nc.subscribe(inbox, cb=heard)
        await nc.publish(log_subject(event_type), envelope(event_type, stream_id), reply=inbox)
        await asyncio.sleep(0.5)  # what arrives within half a second
        await replies.unsubscribe()
        # The log stream, when another test of the session created it, answers with its PubAck; nothing else may.
        assert all(b'"stream"' in a for a in answers), f"a subscriber answered the relayed event: {answers}"
    await wait_until(lambda: len(cache) == 0, "both kept reads dropped", timeout=5)
