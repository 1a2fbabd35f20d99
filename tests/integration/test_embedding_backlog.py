"""The index status's embedding backlog read from a real nats-server: a durable's pending plus unacknowledged
messages, what makes a missing item ``pending`` (``mnemo.services.context_assembler.index_status``); a consumer
that does not exist reads as unknown (None), never as an error."""

from __future__ import annotations

import uuid

import pytest
from nats.aio.client import Client
from nats.js.api import AckPolicy, ConsumerConfig

from mnemo.services.context_assembler.index_status import jetstream_backlog

pytestmark = pytest.mark.integration


async def test_the_backlog_is_the_durables_pending_and_unacknowledged_messages(nc: Client) -> None:
    js = nc.jetstream()
    stream, durable = f"BACKLOG_{uuid.uuid4().hex[:8]}", "embedder"
    await js.add_stream(name=stream, subjects=[f"{stream.lower()}.>"])
    try:
        await js.add_consumer(stream, ConsumerConfig(durable_name=durable, ack_policy=AckPolicy.EXPLICIT))
        backlog = jetstream_backlog(nc.jetstream, stream, durable)
        assert await backlog() == 0
        for n in range(5):
            await js.publish(f"{stream.lower()}.e{n}", b"{}")
        assert await backlog() == 5
        sub = await js.pull_subscribe_bind(durable, stream)
        first, second = await sub.fetch(2, timeout=5)
        await first.ack_sync()  # one done, one delivered and not yet acknowledged, three waiting
        assert await backlog() == 4
        await second.ack_sync()
        assert await backlog() == 3
        assert await jetstream_backlog(nc.jetstream, stream, "nobody")() is None
        assert await jetstream_backlog(nc.jetstream, f"{stream}_NONE", durable)() is None
    finally:
        await js.delete_stream(stream)
