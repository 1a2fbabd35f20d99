"""``Staged`` batch handlers (pipelined consumers) on a real nats-server: order, backpressure, graceful stop."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig

from mnemo.shared.delivery import Completion, Item, Rejection, Staged
from mnemo.shared.delivery.subscribe import max_ack_pending
from mnemo.shared.settings import DeliverySettings
from tests.integration.test_delivery import Env, _acked_through, body, decode_n, env  # noqa: F401 (fixture)
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


async def test_stages_run_in_delivery_order_with_bounded_overlap(env: Env) -> None:  # noqa: F811
    events: list[tuple[str, int]] = []
    in_flight = 0
    most = 0

    async def first(items: list[Item[int]]) -> Completion:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        events.append(("first", items[0].value))
        await asyncio.sleep(0.01)

        async def complete() -> list[Rejection]:
            nonlocal in_flight
            await asyncio.sleep(0.05)
            events.append(("done", items[0].value))
            in_flight -= 1
            return [Rejection(i.msg, "odd") for i in items if i.value == 13]

        return complete

    for n in range(40):
        await env.publish(body(n))
    await env.start(Staged(first), DeliverySettings(max_deliver=3, ack_wait_s=5.0, batch_size=4), in_flight=3)
    await wait_until(env.drained, "everything acked")
    firsts = [n for kind, n in events if kind == "first"]
    dones = [n for kind, n in events if kind == "done"]
    assert firsts == sorted(firsts)  # first stages in delivery order
    assert dones == firsts  # completions too
    assert 1 < most <= 3  # batches overlapped, never more than in_flight
    letters = await env.dead_letters()
    assert [decode_n(m) for m in letters] == [13]


async def test_the_next_batch_arrives_while_a_big_batch_completes(env: Env) -> None:  # noqa: F811
    """Batches above JetStream's default max_ack_pending (1,000) still overlap: the durable allows every batch
    in flight to stay unacked, so the next fetch gets its messages while the previous batch completes."""
    batch = 1_050

    async def both_batches_delivered() -> bool:
        return (await env.consumer()).num_ack_pending == 2 * batch

    async def first(items: list[Item[int]]) -> Completion:
        async def complete() -> list[Rejection]:
            if items[0].value == 0:
                await wait_until(both_batches_delivered, "the second batch delivered during the first's completion")
            return []

        return complete

    await asyncio.gather(*(env.publish(body(n)) for n in range(2 * batch)))
    await env.start(Staged(first), DeliverySettings(max_deliver=3, ack_wait_s=30.0, batch_size=batch))
    await wait_until(env.drained, "everything acked", 60.0)


async def test_a_durable_created_by_an_older_version_gets_todays_settings(env: Env) -> None:  # noqa: F811
    await env.js.add_consumer(
        env.stream,
        ConsumerConfig(
            durable_name=env.durable,
            filter_subject=f"{env.prefix}.>",
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=30.0,
            max_deliver=7,
        ),
    )
    assert (await env.consumer()).config.max_ack_pending == 1_000  # JetStream's default

    delivery = DeliverySettings(max_deliver=3, ack_wait_s=12.0, batch_size=600)

    async def first(items: list[Item[int]]) -> Completion:
        async def complete() -> list[Rejection]:
            return []

        return complete

    await env.start(Staged(first), delivery)

    config = (await env.consumer()).config
    assert config.max_ack_pending == max_ack_pending(delivery) == 1_800
    assert config.ack_wait == 12.0
    assert config.max_deliver == 3 + 5
    assert config.filter_subject == f"{env.prefix}.>"  # fixed at creation: untouched
    await env.publish(body(1))
    await wait_until(env.drained, "the updated durable still delivers")


async def test_graceful_stop_waits_for_background_completions(env: Env) -> None:  # noqa: F811
    done: Counter[int] = Counter()
    seen: list[int] = []
    started = asyncio.Event()

    async def first(items: list[Item[int]]) -> Completion:
        seen.extend(i.value for i in items)

        async def complete() -> list[Rejection]:
            started.set()
            await asyncio.sleep(1.5)
            done.update(i.value for i in items)
            return []

        return complete

    for n in range(3):
        await env.publish(body(n))
    delivery = DeliverySettings(max_deliver=3, ack_wait_s=1.0, batch_size=16)
    broker = await env.start(Staged(first), delivery, in_flight=2)
    await asyncio.wait_for(started.wait(), 30)
    await broker.stop()  # returns only once the completion in the background finished and acked
    env.brokers.remove(broker)
    assert seen
    assert all(done[n] == 1 for n in seen)
    await wait_until(lambda: _acked_through(env, max(seen)), "the in-flight batch acked", timeout=10.0)


async def test_a_leading_message_begins_a_batch_after_those_before_it(env: Env) -> None:  # noqa: F811
    """``Staged.leads``: a message whose first stage waits for every earlier message to be acked (as an ingest fork
    waits for its parent's partition) is cut from the fetched batch with what follows it, so the messages before
    it are completed and acked without it: fetched in one batch with them, it would wait for itself."""
    batches: list[list[int]] = []

    def leads(msg: Msg) -> bool:
        return decode_n(msg) % 4 == 3

    async def acked_before(n: int) -> bool:  # message n is stream sequence n + 1
        info = await env.consumer()
        return info.ack_floor is not None and (info.ack_floor.stream_seq or 0) >= n

    async def first(items: list[Item[int]]) -> Completion:
        batches.append([i.value for i in items])
        if leads(items[0].msg):
            await wait_until(lambda: acked_before(items[0].value), "the messages before it acked", 10.0)

        async def complete() -> list[Rejection]:
            return []

        return complete

    for n in range(12):
        await env.publish(body(n))
    await env.start(Staged(first, leads=leads), DeliverySettings(max_deliver=3, ack_wait_s=5.0, batch_size=16))
    await wait_until(env.drained, "everything acked", 60.0)
    assert [n for batch in batches for n in batch] == list(range(12))  # each once, in stream order
    assert all(batch.index(n) == 0 for batch in batches for n in batch if n % 4 == 3), batches
    assert len(batches) >= 4
