"""The FastStream 0.7.8 / nats-py 2.16 timeout mismatch worked around in mnemo/shared/broker.py.

FastStream's batch pull loop fetches again with the *remaining* window after a partial batch and stops on
``nats.errors.TimeoutError``. With a short remaining window nats-py raises the builtin ``TimeoutError``
instead, the loop's task dies, and the partial batch it already holds is only redelivered after
``ack_wait``. These tests pin both halves: the fetch contract FastStream relies on, and the outcome. The shim also tops a
fetch cut short by its deadline up with the messages already delivered to it (``_top_up``).
"""

from __future__ import annotations

import asyncio
import json
import uuid

import nats
import nats.errors
import pytest
from faststream.nats import JStream, NatsRouter

import mnemo.shared.broker  # noqa: F401 - importing it installs the fetch shim, as every service does
from mnemo.shared.broker import _top_up, make_broker
from mnemo.shared.delivery import Item, Rejection, subscribe_batches
from mnemo.shared.settings import DeliverySettings, Settings
from mnemo.shared.streams import ensure_streams
from tests.integration.batches import bytes_consumer

pytestmark = pytest.mark.integration


async def test_fetch_timeouts_are_the_nats_error_faststream_catches(nats_url: str) -> None:
    tag = uuid.uuid4().hex[:8]
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        await js.add_stream(name=f"EMPTY_{tag}", subjects=[f"empty.{tag}.>"])
        psub = await js.pull_subscribe(f"empty.{tag}.>", durable=f"empty_{tag}")
        raised: list[type[BaseException]] = []
        for timeout in (1e-6, 1e-4, 1e-3):  # tiny windows reach nats-py's bare-TimeoutError paths
            for _ in range(10):
                try:
                    assert await psub.fetch(batch=10, timeout=timeout) == []
                except TimeoutError as exc:
                    raised.append(type(exc))
        assert raised, "no fetch timed out"
        assert all(issubclass(t, nats.errors.TimeoutError) for t in raised), raised
    finally:
        await nc.close()


async def test_partial_batch_is_handled_on_first_delivery(nats_url: str) -> None:
    tag = uuid.uuid4().hex[:8]
    stream = JStream(f"PARTIAL_{tag}", subjects=[f"partial.{tag}.>"])
    deliveries: list[int] = []

    async def handle(items: list[Item[bytes]]) -> list[Rejection]:
        deliveries.extend(i.msg.metadata.num_delivered for i in items)
        return []

    delivery = DeliverySettings(batch_size=64, ack_wait_s=30.0, max_deliver=3)
    broker = make_broker(Settings(nats_url=nats_url), f"partial-{tag}")
    router = NatsRouter()
    consumer = bytes_consumer(nats_url, f"partial-{tag}", handle, delivery)
    subscribe_batches(
        router,
        subject=f"partial.{tag}.>",
        stream=stream,
        durable=f"partial_{tag}",
        consumer=consumer,
        delivery=delivery,
        title="partial",
    )
    broker.include_router(router)
    nc = await nats.connect(nats_url)
    try:
        await ensure_streams(nc.jetstream())
        await broker.start()
        js = nc.jetstream()
        for i in range(12):  # a trickle, far fewer than batch_size: many partial batches
            await js.publish(f"partial.{tag}.x", str(i).encode())
            await asyncio.sleep(0.01)
        for _ in range(400):  # up to 20 s; a lost partial batch only comes back after ack_wait (30 s)
            if len(deliveries) >= 12:
                break
            await asyncio.sleep(0.05)
        assert deliveries == [1] * 12
    finally:
        await broker.stop()
        await nc.drain()


async def test_a_fetch_cut_short_takes_the_messages_already_delivered(nats_url: str) -> None:
    """A fetch that reached its deadline while the event loop was busy leaves messages the server already sent
    in the subscription's queue; the shim hands them over with the batch, in order, without status messages."""
    tag = uuid.uuid4().hex[:8]
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        await js.add_stream(name=f"TOPUP_{tag}", subjects=[f"topup.{tag}.>"])
        for i in range(10):
            await js.publish(f"topup.{tag}.x", str(i).encode())
        psub = await js.pull_subscribe(f"topup.{tag}.>", durable=f"topup_{tag}")
        # The pull request a cut-short fetch leaves behind: 20 asked, 10 delivered, then "no messages".
        await nc.publish(psub._nms, json.dumps({"batch": 20, "no_wait": True}).encode(), reply=psub._deliver)
        queue = psub._sub._pending_queue
        for _ in range(200):
            if queue.qsize() >= 11:
                break
            await asyncio.sleep(0.01)
        assert queue.qsize() == 11, "ten messages and the status message should be queued"

        first = queue.get_nowait()
        psub._sub._pending_size -= len(first.data)
        batch = _top_up(psub, [first], 20)

        assert [m.data for m in batch] == [str(i).encode() for i in range(10)]
        assert queue.empty()
        assert psub._sub._pending_size == 0
        assert _top_up(psub, [], 20) == []
    finally:
        await nc.close()
