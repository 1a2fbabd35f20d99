"""A pull loop's stop is bounded by its caller: ingest's partition dealing lets a partition go with
``wait_for(loop.stop(), ack_wait)`` and, when a batch does not finish in time, leaves its lease to expire while the
batch completes. A stop that swallowed its own cancellation cancelled the batch in the middle instead and reported
a clean stop, so the lease was released at once to another replica while the cut-short batch's writes had not
been settled."""

from __future__ import annotations

import asyncio
import uuid

import nats
import pytest

from mnemo.shared.delivery import Item, Rejection
from mnemo.shared.delivery.pull import PullLoop, durable_config
from mnemo.shared.settings import DeliverySettings
from tests.integration.batches import bytes_consumer

pytestmark = pytest.mark.integration


async def test_a_stop_cut_short_by_its_caller_returns_while_a_batch_is_stuck(nats_url: str) -> None:
    tag = uuid.uuid4().hex[:8]
    started, release = asyncio.Event(), asyncio.Event()

    async def handle(items: list[Item[bytes]]) -> list[Rejection]:
        started.set()
        await release.wait()  # a batch that does not finish (a database that does not answer)
        return []

    delivery = DeliverySettings(batch_size=8, ack_wait_s=30.0, max_deliver=3)
    consumer = bytes_consumer(nats_url, f"stop-{tag}", handle, delivery)
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    await js.add_stream(name=f"STOP_{tag}", subjects=[f"stop.{tag}.>"])
    loop = PullLoop(nc, f"STOP_{tag}", durable_config(f"stop_{tag}", f"stop.{tag}.>", delivery), consumer, batch_size=8)
    try:
        await loop.start()
        await js.publish(f"stop.{tag}.x", b"one")
        await asyncio.wait_for(started.wait(), 20)

        with pytest.raises(TimeoutError):
            await asyncio.wait_for(loop.stop(), 0.5)
    finally:
        release.set()
        await asyncio.wait_for(loop.stop(), 20)  # once the batch finishes, a stop completes
        await nc.drain()
