"""Delivery semantics for JetStream batch consumers, the same in every service.

- Explicit acks: a message is acked only after its effect is durable.
- Invalid payloads (undecodable, failing validation) go to the service's dead-letter subject with the
  reason at once; they never block the rest of the batch.
- A handler failure naks the batch with a growing delay; a message that has failed ``max_deliver`` times
  goes to the dead-letter subject with the last error instead (poison message).
- Long work sends ``in_progress`` heartbeats so JetStream does not redeliver it mid-flight.
- A dead letter is acked only once the dead-letter publish itself is acknowledged, so none is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from faststream import AckPolicy, Context, StreamMessage
from faststream.nats import JStream, NatsBroker, NatsRouter, PullSub
from faststream.nats.message import NatsBatchMessage
from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig, DeliverPolicy

from shared import subjects
from shared.settings import DeliverySettings

log = logging.getLogger(__name__)

T = TypeVar("T")

# Headers of a dead letter; the body is the original message's body, unchanged.
DLQ_REASON = "Mnemo-Dlq-Reason"
DLQ_SUBJECT = "Mnemo-Dlq-Original-Subject"
DLQ_SERVICE = "Mnemo-Dlq-Service"
DLQ_ATTEMPTS = "Mnemo-Dlq-Attempts"


class InvalidMessage(ValueError):
    """A message that can never be processed (bad payload, unknown type): dead-letter it at once."""


@dataclass(frozen=True)
class Item(Generic[T]):
    """One decoded message of a batch."""

    value: T
    msg: Msg

    @property
    def subject(self) -> str:
        return self.msg.subject


@dataclass(frozen=True)
class Rejection:
    """A message the handler could not process for good, with the reason."""

    msg: Msg
    reason: str


Decoder = Callable[[Msg], Awaitable[T] | T]
BatchHandler = Callable[[list[Item[T]]], Awaitable[Sequence[Rejection]]]


def retry_delay(attempt: int) -> float:
    """Exponential backoff for naks: 0.5 s, 1 s, 2 s, ... capped at 30 s."""
    return float(min(30.0, 0.5 * 2 ** max(0, attempt - 1)))


class DeadLetters:
    def __init__(self, broker: NatsBroker, service: str) -> None:
        self._broker = broker
        self._service = service
        self.subject = subjects.dead_letter_subject(service)

    async def send(self, msg: Msg, reason: str) -> None:
        meta = msg.metadata
        headers = {
            DLQ_REASON: reason[:4000].replace("\r", " ").replace("\n", " "),
            DLQ_SUBJECT: msg.subject,
            DLQ_SERVICE: self._service,
            DLQ_ATTEMPTS: str(meta.num_delivered),
            # A dead letter re-sent after a crash is deduplicated by its origin's stream position.
            "Nats-Msg-Id": f"dlq:{self._service}:{meta.stream}:{meta.sequence.stream}",
        }
        # Through the broker (not raw nats-py) so the dead letter carries the trace context too.
        await self._broker.publish(msg.data, self.subject, headers=headers, stream=subjects.DLQ_STREAM)
        log.warning("dead-lettered %s from %s: %s", msg.subject, self._service, reason)


@contextlib.asynccontextmanager
async def heartbeat(msgs: Sequence[Msg], every_s: float):  # type: ignore[no-untyped-def]
    """Tell JetStream the batch is still being worked on, so it is not redelivered mid-flight."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(every_s)
            for m in msgs:
                if m.is_acked:  # settled already (acked, nak'ed or dead-lettered)
                    continue
                with contextlib.suppress(Exception):
                    await m.in_progress()

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class BatchConsumer(Generic[T]):
    """Runs one fetched batch through ``decode`` then ``handle`` with the semantics in the module doc.

    ``backoff(attempt)`` is the nak delay in seconds after the ``attempt``-th failed delivery.
    """

    def __init__(
        self,
        *,
        decode: Decoder[T],
        handle: BatchHandler[T],
        dead_letters: DeadLetters,
        max_deliver: int,
        ack_wait_s: float,
        backoff: Callable[[int], float] = retry_delay,
    ) -> None:
        self._decode = decode
        self._handle = handle
        self._dlq = dead_letters
        self._max_deliver = max_deliver
        self._backoff = backoff
        self._beat_every = max(0.5, ack_wait_s / 3)

    async def __call__(self, msgs: Sequence[Msg]) -> None:
        items: list[Item[T]] = []
        for msg in msgs:
            try:
                value = self._decode(msg)
                if isinstance(value, Awaitable):
                    value = await value
            except Exception as exc:  # any decode failure is permanent for this payload
                await self._reject(msg, f"invalid payload: {type(exc).__name__}: {exc}")
                continue
            items.append(Item(value, msg))
        if not items:
            return
        try:
            async with heartbeat([i.msg for i in items], self._beat_every):
                rejections = await self._handle(items)
        except Exception as exc:
            if len(items) == 1:
                log.exception("message %s failed", items[0].subject)
                await self._retry_or_dead_letter([items[0].msg], exc)
                return
            # Isolate a poison message: retry the items one by one so the others still go through.
            # The items waiting for their turn are kept alive too, or JetStream redelivers them meanwhile.
            log.warning("batch of %d failed (%s); retrying one by one", len(items), exc)
            async with heartbeat([i.msg for i in items], self._beat_every):
                for item in items:
                    await self._settle([item])
            return
        await self._settle_with(items, rejections)

    async def _settle(self, items: list[Item[T]]) -> None:
        try:
            async with heartbeat([i.msg for i in items], self._beat_every):
                rejections = await self._handle(items)
        except Exception as exc:
            log.exception("message %s failed", items[0].subject)
            await self._retry_or_dead_letter([i.msg for i in items], exc)
            return
        await self._settle_with(items, rejections)

    async def _settle_with(self, items: list[Item[T]], rejections: Sequence[Rejection]) -> None:
        rejected = {id(r.msg) for r in rejections}
        for r in rejections:
            await self._reject(r.msg, r.reason)
        for item in items:
            if id(item.msg) not in rejected:
                await item.msg.ack()

    async def _reject(self, msg: Msg, reason: str) -> None:
        await self._dlq.send(msg, reason)
        await msg.ack()

    async def _retry_or_dead_letter(self, msgs: Sequence[Msg], exc: Exception) -> None:
        for msg in msgs:
            attempt = msg.metadata.num_delivered
            if attempt >= self._max_deliver:
                await self._reject(msg, f"failed {attempt} times, last: {type(exc).__name__}: {exc}")
            else:
                await msg.nak(delay=self._backoff(attempt))


async def _undecoded(message: StreamMessage[Any]) -> Any:
    """FastStream's own batch decoder JSON-parses every body whose content-type says JSON, and one bad body
    then fails the whole batch before the handler runs (never acked, never dead-lettered). Decoding is the
    consumer's job, message by message, so the framework hands the bodies over untouched."""
    return message.body


def subscribe_batches(
    router: NatsRouter,
    *,
    subject: str,
    stream: JStream,
    durable: str,
    consumer: BatchConsumer[T],
    delivery: DeliverySettings,
    title: str,
) -> None:
    """Register ``consumer`` as a durable JetStream pull consumer fetching batches on ``subject``.

    Replicas of a service share the durable, so JetStream spreads batches across them. The server-side
    ``max_deliver`` is a backstop above ours: our consumer dead-letters first, with the reason.
    """

    @router.subscriber(
        subject,
        stream=stream,
        durable=durable,
        pull_sub=PullSub(batch_size=delivery.batch_size, timeout=0.05, batch=True),
        ack_policy=AckPolicy.MANUAL,
        decoder=_undecoded,
        config=ConsumerConfig(
            ack_wait=delivery.ack_wait_s,
            max_deliver=delivery.max_deliver + 5,
            deliver_policy=DeliverPolicy.ALL,
        ),
        title=title,
    )
    async def on_batch(message: NatsBatchMessage = Context("message")) -> None:
        await consumer(message.raw_message)
