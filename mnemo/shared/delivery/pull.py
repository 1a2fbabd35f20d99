"""A durable pull consumer that can be started and stopped while the process runs (ingest's partitions).

FastStream's subscribers live as long as their broker; an ingest partition moves between replicas, so its
consumer is driven here on the core NATS connection. It keeps at most one pull request open (``batch_size``
messages) and hands the :class:`~mnemo.shared.delivery.consumer.BatchConsumer` whatever has arrived as soon as
anything has, so a busy partition gets full batches back to back. A request expires after ``idle_wait_s``; each
one that expires having brought nothing doubles the next one's expiry, up to ``max_idle_wait_s``, and the first
message brings it back to ``idle_wait_s``. An idle partition so costs one pull request per ``max_idle_wait_s``
instead of one a second (16 partitions and the v1 router were ~60 % of an idle 4-replica cluster's NATS
requests, strace, 2026-11-27). What the expiry bounds is how soon a request that was lost (its consumer's leader
went away) is noticed and made again: within a second or two while messages flow, ``max_idle_wait_s`` + 2 s after
a quiet spell. It never delays a message: an open request delivers each one as it arrives.

Starting takes the durable over from whoever held it last (``start`` with ``resume=True``): the durable is made
again, delivering from its ack floor on. Whatever the last holder had delivered but not acknowledged (a replica
killed mid-batch, or a request of a stopped holder still open) then comes again at once, as first deliveries in
stream order, instead of after ``ack_wait`` behind newer messages; what it had recorded already is recorded once
(ingest is idempotent by event id).

Stopping is graceful and does not wait for the open request to expire: no new pull, the inbox unsubscribed (the
server drops a request nobody listens to), what had arrived but was not begun naked at once, then the batches in
flight completed and acknowledged (``BatchConsumer.drain``). A message the open request delivers after that goes
nowhere and is delivered again by the durable its next holder makes (``resume``), so a stop takes no longer than
the batches in flight however long the request's expiry.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import secrets

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
_EXPIRED = "408"
#: The longest expiry of an idle partition's pull request (see the module).
MAX_IDLE_WAIT_S = 8.0


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
        max_idle_wait_s: float = MAX_IDLE_WAIT_S,
    ) -> None:
        self._nc = nc
        self._stream = stream
        self._config = config
        self._durable = config.durable_name or ""
        self._consumer = consumer
        self._batch_size = batch_size
        self._inbox = f"{inbox_prefix}.{secrets.token_hex(8)}"
        self._idle_wait_s = idle_wait_s
        self._max_idle_wait_s = max(idle_wait_s, max_idle_wait_s)
        self._expires_s = idle_wait_s  # the next request's expiry
        self._open_expires_s = idle_wait_s  # the open request's (it ends within this)
        self._queue: asyncio.Queue[Msg | None] = asyncio.Queue()  # None: ``stop`` wakes the loop
        self._sub: Subscription | None = None
        self._task: asyncio.Task[None] | None = None
        self._open = 0  # messages the open pull request may still bring (0: none open)
        self._brought = 0  # messages the open (or last) request brought
        self._stopping = False

    @property
    def durable(self) -> str:
        return self._durable

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
        """Stop pulling, hand back what arrived and was not begun, complete the batches in flight."""
        self._stopping = True
        if self._task is not None:
            # Wakes a wait for messages at once; a batch being handled is finished first (the loop then sees the
            # flag). ``asyncio.wait``, not ``await self._task``: a caller's ``wait_for`` timing out cancels this stop,
            # not the batch (it completes on its own).
            self._queue.put_nowait(None)
            await asyncio.wait({self._task})
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
        await self._hand_back_queued()
        await self._consumer.drain()

    async def _run(self) -> None:
        while not self._stopping:
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

    async def _next_batch(self) -> list[Msg]:
        batch = self._take_queued()
        if batch or self._stopping:
            return batch
        if self._open <= 0:
            await self._request()
        try:
            first = await asyncio.wait_for(self._queue.get(), self._open_expires_s + 2.0)
        except TimeoutError:  # the request was lost (a node went away, a reconnect): make a new one
            self._open, self._expires_s = 0, self._idle_wait_s
            return []
        if first is None or self._ended_by(first):
            return []
        self._delivered()
        await asyncio.sleep(0)  # let what arrived with it be queued
        return [first, *self._take_queued()]

    def _take_queued(self) -> list[Msg]:
        out: list[Msg] = []
        while not self._queue.empty():
            msg = self._queue.get_nowait()
            if msg is not None and not self._ended_by(msg):
                self._delivered()
                out.append(msg)
        return out

    def _delivered(self) -> None:
        self._open -= 1
        self._brought += 1
        self._expires_s = self._idle_wait_s

    def _ended_by(self, msg: Msg) -> bool:
        """Whether ``msg`` is a status reply, which ends the open request (408 expired, 409 a leader change, the
        consumer deleted ...). An expiry that brought nothing doubles the next request's (up to the maximum)."""
        if msg.headers and _STATUS in msg.headers and not msg.data:
            if msg.headers[_STATUS] == _EXPIRED and not self._brought:
                self._expires_s = min(2 * self._expires_s, self._max_idle_wait_s)
            else:
                self._expires_s = self._idle_wait_s
            self._open = 0
            return True
        return False

    async def _request(self) -> None:
        expires_ns = int(self._expires_s * 1e9)
        request = json.dumps({"batch": self._batch_size, "expires": expires_ns}).encode()
        await self._nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{self._stream}.{self._durable}", request, self._inbox)
        self._open, self._brought, self._open_expires_s = self._batch_size, 0, self._expires_s

    async def _hand_back_queued(self) -> None:
        """Nak what arrived and was not begun (redelivered at once, elsewhere)."""
        late = self._take_queued()
        for msg in late:
            with contextlib.suppress(Exception):
                await msg.nak()
        if late:
            log.info("%s: handed back %d message(s) delivered while stopping", self._durable, len(late))
