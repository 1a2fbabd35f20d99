"""A pull loop's stop is bounded by its caller: ingest's partition dealing lets a partition go with
``wait_for(loop.stop(), ack_wait)`` and, when a batch does not finish in time, leaves its lease to expire while the
batch completes. A stop that swallowed its own cancellation cancelled the batch in the middle instead and reported
a clean stop, so the lease was released at once to another replica while the cut-short batch's writes had not
been settled.

It also ends by itself, before its owner stops it, where pulling on would share the durable with another replica
(issue 25): once the lease it consumes under is stale, and once its durable is deleted under it (the partition's
next holder remakes it under the same name)."""

from __future__ import annotations

import asyncio
import uuid

import nats
import pytest
from nats.aio.msg import Msg

from mnemo.shared.broker import make_broker
from mnemo.shared.delivery import BatchConsumer, Completion, DeadLetters, Item, Rejection, Staged
from mnemo.shared.delivery.pull import PullLoop, durable_config
from mnemo.shared.lease import Lease, lease_bucket
from mnemo.shared.settings import DeliverySettings, Settings
from tests.integration.batches import bytes_consumer
from tests.waiting import wait_until

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


class Clock:
    """A monotonic clock the test moves: the lease goes stale when the test says, not when a timer does."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _payload(msg: Msg) -> bytes:
    return msg.data


async def test_a_holder_whose_lease_went_stale_begins_nothing_more_and_stops_pulling(nats_url: str) -> None:
    tag = uuid.uuid4().hex[:8]
    stream, durable, subject = f"STALE_{tag}", f"stale_{tag}", f"stale.{tag}.x"
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    await js.add_stream(name=stream, subjects=[f"stale.{tag}.>"])
    clock = Clock()
    # A TTL far longer than the test: the lease's refresher sleeps through it, only the clock makes it stale.
    ttl = 600.0
    lease = Lease(await lease_bucket(js, 2.0), f"stale-{tag}", ttl, clock=clock)
    await lease.acquire(poll_s=0.1)
    begun: list[bytes] = []

    async def first(items: list[Item[bytes]]) -> Completion:
        begun.extend(i.value for i in items)

        async def complete() -> list[Rejection]:
            return []

        return complete

    delivery = DeliverySettings(batch_size=8, ack_wait_s=30.0, max_deliver=3)
    consumer = BatchConsumer(
        decode=_payload,
        handle=Staged(first),
        dead_letters=DeadLetters(make_broker(Settings(nats_url=nats_url), f"stale-{tag}"), f"stale-{tag}"),
        max_deliver=delivery.max_deliver,
        ack_wait_s=delivery.ack_wait_s,
        may_begin=lease.fresh,
    )
    config = durable_config(durable, f"stale.{tag}.>", delivery)
    loop = PullLoop(nc, stream, config, consumer, batch_size=8, may_consume=lease.fresh)
    try:
        await loop.start()
        await js.publish(subject, b"one")
        await wait_until(lambda: begun == [b"one"], "the first message begun under the fresh lease")

        clock.now += ttl  # no refresh succeeded for a whole TTL: the key may have expired, another replica hold it
        two = (await js.publish(subject, b"two")).seq
        await wait_until(lambda: loop.ended, "the pull loop stopped by itself")

        assert begun == [b"one"], "nothing begun once the lease was stale"
        assert lease.lost.is_set()
        info = await js.consumer_info(stream, durable)
        assert (info.ack_floor.stream_seq or 0) < two, "the second message left for the partition's next holder"
    finally:
        await asyncio.wait_for(loop.stop(), 20)
        await lease.stop_refreshing()
        await nc.drain()


async def test_a_loop_whose_durable_is_deleted_stops_pulling(nats_url: str) -> None:
    tag = uuid.uuid4().hex[:8]
    stream, durable, subject = f"GONE_{tag}", f"gone_{tag}", f"gone.{tag}.x"
    seen: list[bytes] = []

    async def handle(items: list[Item[bytes]]) -> list[Rejection]:
        seen.extend(i.value for i in items)
        return []

    delivery = DeliverySettings(batch_size=8, ack_wait_s=30.0, max_deliver=3)
    consumer = bytes_consumer(nats_url, f"gone-{tag}", handle, delivery)
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    await js.add_stream(name=stream, subjects=[f"gone.{tag}.>"])
    config = durable_config(durable, f"gone.{tag}.>", delivery)
    # A pull request that stays open through the test (it would otherwise expire every second and be made again).
    loop = PullLoop(nc, stream, config, consumer, batch_size=8, idle_wait_s=60.0)
    try:
        await loop.start()
        await js.publish(subject, b"one")
        await wait_until(lambda: seen == [b"one"], "the first message handled")

        async def request_open() -> bool:
            return (await js.consumer_info(stream, durable)).num_waiting == 1

        await wait_until(request_open, "the loop's pull request open on the durable")
        # The partition's next holder takes the durable over: deleted (409 to the open request), made again.
        await js.delete_consumer(stream, durable)
        await js.add_consumer(stream, config)
        await wait_until(lambda: loop.ended, "the pull loop stopped by itself")

        await js.publish(subject, b"two")
        remade = await js.consumer_info(stream, durable)
        assert not remade.delivered.consumer_seq, "the remade durable is left to its holder: nothing pulled from it"
        assert seen == [b"one"]
    finally:
        await asyncio.wait_for(loop.stop(), 20)
        await nc.drain()
