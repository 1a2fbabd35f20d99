"""A durable pull consumer that can be started and stopped while the process runs (ingest's partitions).

FastStream's subscribers live as long as their broker; an ingest partition moves between replicas, so its
consumer is driven here on the core NATS connection. It keeps at most one pull request open (``batch_size``
messages, expiring after ``idle_wait_s``) and hands the :class:`~mnemo.shared.delivery.consumer.BatchConsumer`
whatever has arrived as soon as anything has, so a busy partition gets full batches back to back and an idle
one costs one pull request per ``idle_wait_s``.

Starting takes the durable over from whoever held it last (``start`` with ``resume=True``): the durable is made
again, delivering from its ack floor on. Whatever the last holder had delivered but not acknowledged (a replica
killed mid-batch) then comes again at once, as first deliveries in stream order, instead of after ``ack_wait``
behind newer messages; what it had recorded already is recorded once (ingest is idempotent by event id).

Stopping is graceful: no new pull, the open request left to end (its status reply, or ``idle_wait_s``), any
message it still brings naked at once (JetStream redelivers it to the partition's next holder now rather than
after ``ack_wait``), then the batches in flight completed and acknowledged (``BatchConsumer.drain``).

The loop also ends by itself (``ended``), handing back what it still holds, when ``may_consume`` says no (ingest:
the partition's lease went stale, ``Lease.fresh``) or when the durable is deleted under it ("409 Consumer
Deleted": the partition's next holder remade it). Pulling on would share the remade durable with its new holder,
each process seeing gaps in its half and this one's order gate counting from the deleted durable's deliveries
(issue 25). Its owner lets it go then (ingest's partition dealing).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import secrets
from collections.abc import Callable

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from mnemo.shared.delivery.consumer import BatchConsumer
from mnemo.shared.delivery.subscribe import max_ack_pending
from mnemo.shared.delivery.types import T
from mnemo.shared.settings import DeliverySettings

log = logging.getLogger(__name__)

_STATUS = "Status"
_DESCRIPTION = "Description"


def durable_config(durable: str, filter_subject: str, delivery: DeliverySettings) -> ConsumerConfig:
    """The durable's configuration, as ``subscribe_batches`` declares the services' other durables."""
    return ConsumerConfig(
        durable_name=durable,
        filter_subject=filter_subject,
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=delivery.ack_wait_s,
        max_deliver=delivery.max_deliver + 5,  # a backstop: the consumer dead-letters first, with the reason
        deliver_policy=DeliverPolicy.ALL,
        max_ack_pending=max_ack_pending(delivery),
    )


class PullLoop:
    """Feeds ``consumer`` from durable ``durable`` of ``stream`` (created with ``config`` if missing)."""

    def __init__(
        self,
        nc: NatsClient,
        stream: str,
        config: ConsumerConfig,
        consumer: BatchConsumer[T],
        *,
        batch_size: int,
        inbox_prefix: str = "_INBOX",
        idle_wait_s: float = 1.0,
        may_consume: Callable[[], bool] | None = None,
    ) -> None:
        self._nc = nc
        self._stream = stream
        self._config = config
        self._durable = config.durable_name or ""
        self._consumer = consumer
        self._batch_size = batch_size
        self._inbox = f"{inbox_prefix}.{secrets.token_hex(8)}"
        self._idle_wait_s = idle_wait_s
        self._queue: asyncio.Queue[Msg] = asyncio.Queue()
        self._sub: Subscription | None = None
        self._task: asyncio.Task[None] | None = None
        self._open = 0  # messages the open pull request may still bring (0: none open)
        self._stopping = False
        self._waiting = False  # waiting for messages (the only moment ``stop`` may cancel the loop)
        self._may_consume = may_consume
        self._deleted = False  # the durable was deleted under the open request (409 Consumer Deleted)

    @property
    def durable(self) -> str:
        return self._durable

    @property
    def ended(self) -> bool:
        """Whether the loop stopped pulling by itself (``may_consume`` said no, or the durable was deleted)."""
        return self._task is not None and self._task.done() and not self._stopping

    async def start(self, *, resume: bool = False) -> int:
        """Create the durable if missing (with ``resume``: make it again from its ack floor) and start pulling;
        the stream sequence delivery starts after (0: the stream's start)."""
        js = self._nc.jetstream()
        floor = 0
        if resume:
            with contextlib.suppress(NotFoundError):
                info = await js.consumer_info(self._stream, self._durable)
                floor = info.ack_floor.stream_seq if info.ack_floor and info.ack_floor.stream_seq else 0
                await js.delete_consumer(self._stream, self._durable)
        config = self._config
        if floor:
            config = dataclasses.replace(
                config, deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=floor + 1
            )
        await js.add_consumer(self._stream, config)

        async def arrived(msg: Msg) -> None:
            self._queue.put_nowait(msg)

        self._sub = await self._nc.subscribe(self._inbox, cb=arrived)
        self._task = asyncio.create_task(self._run(), name=f"pull {self._durable}")
        return floor

    async def stop(self) -> None:
        """Stop pulling, hand back what the open request still brings, complete the batches in flight."""
        self._stopping = True
        if self._task is not None:
            if self._waiting:  # only a wait for messages is cut short: a batch being handled is finished first
                self._task.cancel()
            # ``asyncio.wait``, not ``await self._task`` under ``suppress(CancelledError)``: that also swallowed the
            # cancellation of this stop itself (a caller's ``wait_for`` timing out), cancelled the batch midway and
            # reported a clean stop; now the caller sees its timeout and the batch completes on its own.
            await asyncio.wait({self._task})
        await self._hand_back_late()
        await self._consumer.drain()
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()

    async def _run(self) -> None:
        while not self._stopping:
            if why := self._must_end():
                log.warning("%s: pulling stops: %s", self._durable, why)
                await self._hand_back_late()
                return
            try:
                batch = await self._next_batch()
                if batch:
                    await self._consumer(batch)
            except asyncio.CancelledError:
                raise
            except Exception:  # a NATS hiccup (reconnecting, no leader yet): pull again shortly
                log.exception("pulling from %s failed; retrying", self._durable)
                self._open = 0
                await asyncio.sleep(1.0)

    def _must_end(self) -> str | None:
        if self._deleted:
            return "the durable was deleted (remade by the partition's next holder)"
        if self._may_consume is not None and not self._may_consume():
            return "it may no longer be consumed here (its lease is stale)"
        return None

    async def _next_batch(self) -> list[Msg]:
        batch = self._take_queued()
        if batch:
            return batch
        if self._open <= 0:
            await self._request()
        self._waiting = True
        try:
            first = await asyncio.wait_for(self._queue.get(), self._idle_wait_s + 2.0)
        except TimeoutError:  # the request was lost (a node went away, a reconnect): make a new one
            self._open = 0
            return []
        finally:
            self._waiting = False
        if self._ended_by(first):
            return []
        self._open -= 1
        await asyncio.sleep(0)  # let what arrived with it be queued
        return [first, *self._take_queued()]

    def _take_queued(self) -> list[Msg]:
        out: list[Msg] = []
        while not self._queue.empty():
            msg = self._queue.get_nowait()
            if not self._ended_by(msg):
                self._open -= 1
                out.append(msg)
        return out

    def _ended_by(self, msg: Msg) -> bool:
        """Whether ``msg`` is a status reply, which ends the open request (408 expired, 404 nothing, 409 ...)."""
        if msg.headers and _STATUS in msg.headers and not msg.data:
            self._open = 0
            if msg.headers[_STATUS] == "409" and msg.headers.get(_DESCRIPTION, "").lower() == "consumer deleted":
                self._deleted = True
            return True
        return False

    async def _request(self) -> None:
        expires_ns = int(self._idle_wait_s * 1e9)
        request = json.dumps({"batch": self._batch_size, "expires": expires_ns}).encode()
        await self._nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{self._stream}.{self._durable}", request, self._inbox)
        self._open = self._batch_size

    async def _hand_back_late(self) -> None:
        """Wait for the open request to end and nak what it still delivered (redelivered at once, elsewhere)."""
        deadline = asyncio.get_running_loop().time() + self._idle_wait_s + 0.5
        late: list[Msg] = []
        while self._open > 0:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                break
            try:
                msg = await asyncio.wait_for(self._queue.get(), remaining)
            except TimeoutError:
                break
            if not self._ended_by(msg):
                self._open -= 1
                late.append(msg)
        late += self._take_queued()
        for msg in late:
            with contextlib.suppress(Exception):
                await msg.nak()
        if late:
            log.info("%s: handed back %d message(s) delivered while stopping", self._durable, len(late))
