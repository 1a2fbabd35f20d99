"""Delivery semantics (``mnemo.shared.delivery``) against the real nats-server (JetStream) through FastStream.

Each test gets its own source stream (``DTEST_<hex>`` on ``dtest.<hex>.>``), its own durable and its own
service name, hence its own dead-letter subject on the shared ``MNEMO_DLQ`` stream. Nothing here asserts a
duration: waits poll for a condition with a generous bound, and a test fails on what it observes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import nats
import pytest
from faststream.nats import JStream, NatsBroker, NatsRouter
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import ConsumerInfo, StorageType, StreamConfig
from nats.js.errors import NotFoundError
from pymongo.errors import ServerSelectionTimeoutError

from mnemo.shared import subjects
from mnemo.shared.broker import ensure_streams, make_broker, start_broker
from mnemo.shared.delivery import (
    DLQ_ATTEMPTS,
    DLQ_REASON,
    DLQ_SERVICE,
    DLQ_SUBJECT,
    BatchConsumer,
    Completion,
    DeadLetters,
    Item,
    Rejection,
    Staged,
    retry_delay,
    subscribe_batches,
)
from mnemo.shared.delivery.order import OrderGate
from mnemo.shared.settings import DeliverySettings, Settings
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


def body(n: int) -> bytes:
    return json.dumps({"n": n}).encode()


def decode_n(msg: Msg) -> int:
    """The test payload: a JSON object with an integer ``n``."""
    n = json.loads(msg.data)["n"]
    if not isinstance(n, int):
        raise TypeError(f"n is {type(n).__name__}")
    return n


Handler = Callable[[list[Item[int]]], Awaitable[Sequence[Rejection]]]


@dataclass
class Env:
    """One test's stream, durable, service and the brokers it started."""

    url: str
    nc: NatsClient
    js: JetStreamContext
    tag: str
    brokers: list[NatsBroker] = field(default_factory=list)
    _dlq_sub: JetStreamContext.PullSubscription | None = None
    _dead: list[Msg] = field(default_factory=list)

    @property
    def stream(self) -> str:
        return f"DTEST_{self.tag}"

    @property
    def prefix(self) -> str:
        return f"dtest.{self.tag}"

    @property
    def durable(self) -> str:
        return f"dtest_{self.tag}"

    @property
    def service(self) -> str:
        return f"dtest-{self.tag}"

    async def publish(self, data: bytes, *, headers: dict[str, str] | None = None) -> int:
        ack = await self.js.publish(f"{self.prefix}.item", data, stream=self.stream, headers=headers)
        return ack.seq

    async def start(
        self,
        handle: Handler | Staged[int],
        delivery: DeliverySettings,
        *,
        backoff: Callable[[int], float] = retry_delay,
        in_flight: int = 2,
        decode: Callable[[Msg], int] = decode_n,
        gate: OrderGate | None = None,
    ) -> NatsBroker:
        """A service replica: its own broker and router consuming the test stream with the shared durable."""
        broker = make_broker(Settings(nats_url=self.url), self.service)
        router = NatsRouter()
        consumer: BatchConsumer[int] = BatchConsumer(
            decode=decode,
            handle=handle,
            dead_letters=DeadLetters(broker, self.service),
            max_deliver=delivery.max_deliver,
            ack_wait_s=delivery.ack_wait_s,
            backoff=backoff,
            in_flight=in_flight,
            gate=gate,
        )
        subscribe_batches(
            router,
            subject=f"{self.prefix}.>",
            stream=JStream(self.stream, declare=False),
            durable=self.durable,
            consumer=consumer,
            delivery=delivery,
            title=f"{self.service}:items",
        )
        broker.include_router(router)
        await start_broker(broker)
        self.brokers.append(broker)
        return broker

    def gate(self, wait_s: float) -> OrderGate:
        """The stream-order gate of the test durable, as ingest's partitions have (``partitions._consuming``)."""

        async def ack_floor() -> int:
            info = await self.consumer()
            return info.ack_floor.stream_seq if info.ack_floor and info.ack_floor.stream_seq else 0

        async def next_of(seq: int) -> int | None:
            try:
                found = await self.js.get_msg(self.stream, seq=seq, subject=f"{self.prefix}.>", next=True)
            except NotFoundError:
                return None
            return found.seq

        return OrderGate(ack_floor, next_of, wait_s=wait_s)

    async def consumer(self) -> ConsumerInfo:
        info: ConsumerInfo = await self.js.consumer_info(self.stream, self.durable)
        return info

    async def drained(self) -> bool:
        """Every message of the stream was delivered to the durable and acked."""
        try:
            info = await self.consumer()
        except NotFoundError:
            return False
        last = (await self.js.stream_info(self.stream)).state.last_seq
        return (
            last > 0
            and info.ack_floor is not None
            and (info.ack_floor.stream_seq or 0) >= last
            and info.num_ack_pending == 0
            and info.num_pending == 0
        )

    async def close(self) -> None:
        for broker in self.brokers:
            await broker.stop()
        self.brokers.clear()
        if self._dlq_sub is not None:  # a pull subscription left open stalls the connection's drain
            await self._dlq_sub.unsubscribe()

    async def dead_letters(self) -> list[Msg]:
        """Everything dead-lettered on this test's service subject so far."""
        if self._dlq_sub is None:
            self._dlq_sub = await self.js.pull_subscribe(
                subjects.dead_letter_subject(self.service), stream=subjects.DLQ_STREAM
            )
        with contextlib.suppress(TimeoutError):  # nats-py raises both its own and the builtin one
            for m in await self._dlq_sub.fetch(batch=100, timeout=0.2):
                await m.ack()
                self._dead.append(m)
        return list(self._dead)


@pytest.fixture
async def env(nats_url: str) -> AsyncIterator[Env]:
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    await ensure_streams(js)
    e = Env(nats_url, nc, js, uuid.uuid4().hex[:12])
    await js.add_stream(StreamConfig(name=e.stream, subjects=[f"{e.prefix}.>"], storage=StorageType.MEMORY))
    try:
        yield e
    finally:
        await e.close()
        with contextlib.suppress(NotFoundError):
            await js.delete_stream(e.stream)
        await nc.drain()


@dataclass
class Recorder:
    """Records every handler call: the batch it got, the delivery counts, and what completed."""

    batches: list[list[int]] = field(default_factory=list)
    deliveries: dict[int, list[int]] = field(default_factory=dict)
    done: Counter[int] = field(default_factory=Counter)

    def saw(self, items: list[Item[int]]) -> None:
        self.batches.append([i.value for i in items])
        for i in items:
            self.deliveries.setdefault(i.value, []).append(i.msg.metadata.num_delivered)

    def calls_with(self, n: int) -> int:
        return sum(n in b for b in self.batches)


async def test_valid_messages_are_handled_and_acked_once(env: Env) -> None:
    rec = Recorder()

    async def handle(items: list[Item[int]]) -> list[Rejection]:
        rec.saw(items)
        rec.done.update(i.value for i in items)
        return []

    for n in range(5):
        await env.publish(body(n))
    await env.start(handle, DeliverySettings(max_deliver=3, ack_wait_s=5.0, batch_size=16))

    await wait_until(env.drained, "all five messages acked")
    assert rec.done == Counter(range(5))
    info = await env.consumer()
    assert info.num_ack_pending == 0
    assert info.num_redelivered == 0
    assert all(d == [1] for d in rec.deliveries.values())
    assert await env.dead_letters() == []


async def test_undecodable_message_is_dead_lettered_and_the_rest_of_its_batch_is_handled(env: Env) -> None:
    rec = Recorder()

    async def handle(items: list[Item[int]]) -> list[Rejection]:
        rec.saw(items)
        rec.done.update(i.value for i in items)
        return []

    await env.publish(body(0))
    bad_seq = await env.publish(b"this is not json")
    # Declared JSON but is not: the framework must not choke on it before our decoder sees it.
    bad_json_seq = await env.publish(b'{"n": ', headers={"content-type": "application/json"})
    wrong_type_seq = await env.publish(json.dumps({"n": "three"}).encode())
    await env.publish(body(4))
    await env.start(handle, DeliverySettings(max_deliver=3, ack_wait_s=5.0, batch_size=16))

    await wait_until(env.drained, "the whole stream acked")
    await wait_until(lambda: _count(env.dead_letters(), 3), "three dead letters")
    dead = {m.headers["Nats-Msg-Id"]: m for m in await env.dead_letters() if m.headers}
    assert len(dead) == 3
    by_origin = {int(k.rsplit(":", 1)[1]): m for k, m in dead.items()}
    assert set(by_origin) == {bad_seq, bad_json_seq, wrong_type_seq}
    for m in by_origin.values():
        assert m.headers is not None
        assert m.headers[DLQ_REASON].startswith("invalid payload:")
        assert m.headers[DLQ_SUBJECT] == f"{env.prefix}.item"
        assert m.headers[DLQ_SERVICE] == env.service
    assert "JSONDecodeError" in by_origin[bad_seq].headers[DLQ_REASON]  # type: ignore[index]
    assert "JSONDecodeError" in by_origin[bad_json_seq].headers[DLQ_REASON]  # type: ignore[index]
    assert "TypeError" in by_origin[wrong_type_seq].headers[DLQ_REASON]  # type: ignore[index]
    assert by_origin[bad_seq].data == b"this is not json"
    # The valid messages around the bad ones went through in the same first batch, once.
    assert rec.batches[0] == [0, 4]
    assert rec.done == Counter([0, 4])


async def _count(dead: Awaitable[list[Msg]], n: int) -> bool:
    return len(await dead) >= n


async def test_handler_rejection_dead_letters_exactly_that_message(env: Env) -> None:
    rec = Recorder()

    async def handle(items: list[Item[int]]) -> list[Rejection]:
        rec.saw(items)
        rec.done.update(i.value for i in items if i.value != 1)
        return [Rejection(i.msg, f"n={i.value} is refused") for i in items if i.value == 1]

    for n in range(3):
        await env.publish(body(n))
    await env.start(handle, DeliverySettings(max_deliver=3, ack_wait_s=5.0, batch_size=16))

    await wait_until(env.drained, "the whole stream acked")
    await wait_until(lambda: _count(env.dead_letters(), 1), "a dead letter")
    dead = await env.dead_letters()
    assert len(dead) == 1
    assert dead[0].data == body(1)
    assert dead[0].headers is not None
    assert dead[0].headers[DLQ_REASON] == "n=1 is refused"
    assert dead[0].headers[DLQ_ATTEMPTS] == "1"
    assert rec.done == Counter([0, 2])
    assert all(d == [1] for d in rec.deliveries.values())  # a rejection is final: no redelivery


async def test_transient_failure_is_retried_with_backoff_then_succeeds(env: Env) -> None:
    rec = Recorder()
    failures = 2
    delays: list[tuple[int, float]] = []

    def backoff(attempt: int) -> float:
        delays.append((attempt, retry_delay(attempt)))
        return retry_delay(attempt)

    async def handle(items: list[Item[int]]) -> list[Rejection]:
        rec.saw(items)
        if len(rec.batches) <= failures:
            raise ConnectionError("store unavailable")
        rec.done.update(i.value for i in items)
        return []

    await env.publish(body(7))
    await env.start(handle, DeliverySettings(max_deliver=4, ack_wait_s=5.0, batch_size=16), backoff=backoff)

    await wait_until(lambda: rec.done[7] == 1, "the message handled after its failures")
    await wait_until(env.drained, "the message acked")
    assert rec.deliveries[7] == [1, 2, 3]
    # Each failure was nak'ed with the growing delay of its attempt (0.5 s, then 1 s).
    assert delays == [(1, retry_delay(1)), (2, retry_delay(2))]
    assert retry_delay(1) < retry_delay(2)
    assert await env.dead_letters() == []


async def test_a_decode_that_cannot_reach_the_key_store_is_retried_not_dead_lettered(env: Env) -> None:
    """A decrypting decoder reads the data key from MongoDB: while it is down the decode fails with a
    connection error that says nothing about the payload, so the message is retried with backoff (make chaos
    once dead-lettered one as an invalid payload)."""
    rec = Recorder()
    outage = 2

    def decode_when_the_store_is_back(msg: Msg) -> int:
        if msg.metadata.num_delivered <= outage:
            raise ServerSelectionTimeoutError("127.0.0.1:27017: [Errno 111] Connection refused")
        return decode_n(msg)

    async def handle(items: list[Item[int]]) -> list[Rejection]:
        rec.saw(items)
        rec.done.update(i.value for i in items)
        return []

    await env.publish(body(5))
    await env.start(
        handle, DeliverySettings(max_deliver=4, ack_wait_s=5.0, batch_size=16), backoff=lambda _: 0.1,
        decode=decode_when_the_store_is_back,
    )  # fmt: skip

    await wait_until(lambda: rec.done[5] == 1, "the message handled once the key store answers")
    await wait_until(env.drained, "the message acked")
    assert rec.deliveries[5] == [outage + 1]
    assert await env.dead_letters() == []


async def test_poison_message_is_isolated_and_dead_lettered_after_max_deliver(env: Env) -> None:
    rec = Recorder()
    poison = 2

    async def handle(items: list[Item[int]]) -> list[Rejection]:
        rec.saw(items)
        if any(i.value == poison for i in items):
            raise ValueError(f"cannot digest {poison}")
        rec.done.update(i.value for i in items)
        return []

    for n in range(4):
        await env.publish(body(n))
    max_deliver = 3
    await env.start(handle, DeliverySettings(max_deliver=max_deliver, ack_wait_s=5.0, batch_size=16))

    await wait_until(lambda: _count(env.dead_letters(), 1), "the poison message dead-lettered")
    await wait_until(env.drained, "the whole stream acked")
    dead = await env.dead_letters()
    assert len(dead) == 1
    assert dead[0].data == body(poison)
    assert dead[0].headers is not None
    assert dead[0].headers[DLQ_ATTEMPTS] == str(max_deliver)
    assert f"failed {max_deliver} times" in dead[0].headers[DLQ_REASON]
    assert f"ValueError: cannot digest {poison}" in dead[0].headers[DLQ_REASON]
    # The poison arrived with others (all four were stored before the consumer started), whose first
    # delivery still went through, once each, in the one-by-one retry.
    first = next(b for b in rec.batches if poison in b)
    assert len(first) > 1
    assert rec.done == Counter([0, 1, 3])
    assert all(rec.deliveries[n] == [1, 1] for n in first if n != poison)  # the failed batch, then alone
    assert sorted(set(rec.deliveries[poison])) == list(range(1, max_deliver + 1))


async def test_slow_handler_is_not_redelivered_thanks_to_the_heartbeat(env: Env) -> None:
    rec = Recorder()
    delivery = DeliverySettings(max_deliver=3, ack_wait_s=1.0, batch_size=16)

    async def handle(items: list[Item[int]]) -> list[Rejection]:
        rec.saw(items)
        await asyncio.sleep(3.0)  # three times the ack wait
        rec.done.update(i.value for i in items)
        return []

    # Two replicas on the same durable, one busy with the message and one idle: without progress acks,
    # JetStream would hand the message to the idle one once the ack wait is over.
    await env.start(handle, delivery)
    await env.start(handle, delivery)
    await env.publish(body(0))

    await wait_until(lambda: rec.done[0] >= 1, "the message handled")
    await wait_until(env.drained, "the message acked")
    assert rec.done == Counter([0])
    assert rec.calls_with(0) == 1
    assert rec.deliveries[0] == [1]
    assert (await env.consumer()).num_redelivered == 0


async def test_graceful_shutdown_finishes_and_acks_the_batch_in_flight(env: Env) -> None:
    rec = Recorder()
    started = asyncio.Event()
    delivery = DeliverySettings(max_deliver=3, ack_wait_s=1.0, batch_size=16)

    async def handle(items: list[Item[int]]) -> list[Rejection]:
        rec.saw(items)
        started.set()
        await asyncio.sleep(1.5)
        rec.done.update(i.value for i in items)
        return []

    for n in range(3):
        await env.publish(body(n))
    broker = await env.start(handle, delivery)
    await asyncio.wait_for(started.wait(), 30)
    in_flight = list(rec.batches[0])
    assert in_flight, "the first batch is in flight"

    await broker.stop()
    env.brokers.remove(broker)
    # stop() returned only once the batch finished; its acks reached the server.
    assert all(rec.done[n] == 1 for n in in_flight)
    await wait_until(lambda: _acked_through(env, max(in_flight)), "the in-flight batch acked", timeout=10.0)

    # A restarted replica gets what is left (if anything) and a new message, never the finished batch.
    await env.start(handle, delivery)
    await env.publish(body(99))
    await wait_until(lambda: rec.done[99] == 1, "the new message handled after the restart")
    await wait_until(env.drained, "everything acked")
    assert rec.done == Counter([0, 1, 2, 99])
    assert all(rec.calls_with(n) == 1 for n in in_flight)
    assert all(d == [1] for d in rec.deliveries.values())


async def _acked_through(env: Env, n: int) -> bool:
    """The durable acked every message up to the one carrying ``n`` (n is its stream sequence - 1 here)."""
    info = await env.consumer()
    return info.ack_floor is not None and (info.ack_floor.stream_seq or 0) >= n + 1 and info.num_ack_pending == 0


async def test_items_waiting_in_the_one_by_one_retry_are_kept_alive(env: Env) -> None:
    rec = Recorder()
    delivery = DeliverySettings(max_deliver=3, ack_wait_s=1.0, batch_size=16)

    async def handle(items: list[Item[int]]) -> list[Rejection]:
        rec.saw(items)
        if len(items) > 1:
            raise RuntimeError("the batch as a whole fails")
        await asyncio.sleep(0.8)  # each alone is within the ack wait; the last waits far longer for its turn
        rec.done.update(i.value for i in items)
        return []

    for n in range(4):
        await env.publish(body(n))
    await env.start(handle, delivery)
    await env.start(handle, delivery)  # an idle replica that would get any message JetStream redelivers

    await wait_until(lambda: sum(rec.done.values()) >= 4, "all four handled")
    await wait_until(env.drained, "all four acked")
    assert rec.done == Counter(range(4))
    assert (await env.consumer()).num_redelivered == 0


async def test_with_a_gate_a_batch_retried_one_by_one_keeps_stream_order(env: Env) -> None:
    """A gated batch whose first stage failed through its in-place retries (the database down) is retried one
    by one; the database is back right after its first message failed alone once more. What follows that
    message is handed back rather than tried, so its first stage still runs in stream order."""
    down = True
    begun: list[int] = []

    async def first(items: list[Item[int]]) -> Completion:
        nonlocal down
        if down:
            if [i.value for i in items] == [0]:
                down = False  # back right after the first message failed alone
            raise ConnectionError("the database is down")
        begun.extend(i.value for i in items)
        return _nothing_refused

    for n in range(4):
        await env.publish(body(n))
    delivery = DeliverySettings(max_deliver=2, ack_wait_s=1.0, batch_size=16)
    await env.start(Staged(first), delivery, backoff=lambda _: 0.1, gate=env.gate(wait_s=0.2))

    await wait_until(env.drained, "all four acked")
    assert begun == [0, 1, 2, 3]
    assert await env.dead_letters() == []


async def _nothing_refused() -> Sequence[Rejection]:
    return []


async def test_with_a_gate_a_message_handed_back_is_not_overtaken_by_first_deliveries(env: Env) -> None:
    """Issue 25 (make chaos, SecantusDB killed): 0's completion fails and 0 is naked with backoff; 1 arrives,
    waits for 0 and is handed back for ``ack_wait``; 0 comes back and begins alone. 2, published then, is a
    first delivery whose consumer sequence follows on from 0's redelivery: it must still wait for 1 (before the
    fix the gate's delivery fast path began it at once, and 1 was recorded ``ack_wait`` later, after it)."""
    begun: list[int] = []
    failed = asyncio.Event()

    async def first(items: list[Item[int]]) -> Completion:
        begun.extend(i.value for i in items)

        async def complete() -> Sequence[Rejection]:
            if not failed.is_set():
                failed.set()
                raise ServerSelectionTimeoutError("the database went down under the completion")
            return []

        return complete

    delivery = DeliverySettings(max_deliver=5, ack_wait_s=6.0, batch_size=16)
    await env.start(Staged(first), delivery, backoff=lambda _: 3.0, gate=env.gate(wait_s=0.2))
    await env.publish(body(0))
    await failed.wait()
    await env.publish(body(1))  # arrives while 0 is naked (3 s): handed back for ack_wait (6 s)
    await wait_until(lambda: begun.count(0) == 2, "0 redelivered and begun alone")
    await env.publish(body(2))

    await wait_until(env.drained, "all three acked")
    assert [n for n in begun if n] == [1, 2]
    assert await env.dead_letters() == []
