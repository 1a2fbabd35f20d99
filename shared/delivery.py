"""Delivery semantics for JetStream batch consumers, the same in every service.

- Explicit acks: a message is acked only after its effect is durable.
- Invalid payloads (undecodable, failing validation) go to the service's dead-letter subject with the
  reason at once; they never block the rest of the batch.
- A handler failure naks the batch with a growing delay; a message that has failed ``max_deliver`` times
  goes to the dead-letter subject with the last error instead (poison message).
- Long work sends ``in_progress`` heartbeats so JetStream does not redeliver it mid-flight.
- A dead letter is acked only once the dead-letter publish itself is acknowledged, so none is lost.
- Each message gets its own CONSUMER span, child of the trace context in its headers: FastStream's
  middleware opens one new trace per *batch* (with links only), which would cut a message's path across the
  services into several traces. Handlers carry ``Item.traceparent`` into what they produce.
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
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

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


_PROPAGATOR = TraceContextTextMapPropagator()
TRACEPARENT = "traceparent"


@dataclass(frozen=True)
class Item(Generic[T]):
    """One decoded message of a batch, with the span its processing is recorded in."""

    value: T
    msg: Msg
    span: Span = trace.INVALID_SPAN

    @property
    def subject(self) -> str:
        return self.msg.subject

    @property
    def traceparent(self) -> str | None:
        """W3C ``traceparent`` of this message's span: what the events it produces carry, so downstream
        consumers continue this trace (None when tracing recorded nothing for it)."""
        return traceparent_of(self.span)


def traceparent_of(span: Span) -> str | None:
    if not span.get_span_context().is_valid:
        return None
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
    return carrier.get(TRACEPARENT)


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
        self.service = service
        self.subject = subjects.dead_letter_subject(service)

    async def send(self, msg: Msg, reason: str) -> None:
        meta = msg.metadata
        headers = {
            DLQ_REASON: reason[:4000].replace("\r", " ").replace("\n", " "),
            DLQ_SUBJECT: msg.subject,
            DLQ_SERVICE: self.service,
            DLQ_ATTEMPTS: str(meta.num_delivered),
            # A dead letter re-sent after a crash is deduplicated by its origin's stream position.
            "Nats-Msg-Id": f"dlq:{self.service}:{meta.stream}:{meta.sequence.stream}",
        }
        # Through the broker (not raw nats-py) so the dead letter carries the trace context too.
        await self._broker.publish(msg.data, self.subject, headers=headers, stream=subjects.DLQ_STREAM)
        log.warning("dead-lettered %s from %s: %s", msg.subject, self.service, reason)


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

    ``backoff(attempt)`` is the nak delay in seconds after the ``attempt``-th failed delivery. ``tracer``
    records the per-message spans; services pass their own provider's (``shared.telemetry``), the default
    is the global one (a no-op unless the process configured OpenTelemetry).
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
        tracer: Tracer | None = None,
    ) -> None:
        self._decode = decode
        self._handle = handle
        self._dlq = dead_letters
        self._max_deliver = max_deliver
        self._backoff = backoff
        self._beat_every = max(0.5, ack_wait_s / 3)
        self._tracer = tracer or trace.get_tracer(__name__)

    async def __call__(self, msgs: Sequence[Msg]) -> None:
        spans: list[Span] = []
        try:
            items: list[Item[T]] = []
            for msg in msgs:
                span = self._start_span(msg)
                spans.append(span)
                try:
                    value = self._decode(msg)
                    if isinstance(value, Awaitable):
                        value = await value
                except Exception as exc:  # any decode failure is permanent for this payload
                    await self._reject(msg, f"invalid payload: {type(exc).__name__}: {exc}", span)
                    continue
                event_id = getattr(value, "event_id", None)  # log events carry one
                if isinstance(event_id, str):
                    span.set_attribute("mnemo.event_id", event_id)
                items.append(Item(value, msg, span))
            if items:
                await self._process(items)
        finally:
            for span in spans:
                span.end()

    def _start_span(self, msg: Msg) -> Span:
        """The message's CONSUMER span, child of the context its producer put in the headers (a new trace
        when there is none)."""
        headers = msg.headers or {}
        attributes = {
            "messaging.system": "nats",
            "messaging.operation": "process",
            "messaging.destination.name": msg.subject,
        }
        if msg_id := headers.get("Nats-Msg-Id"):
            attributes["messaging.message.id"] = msg_id
        return self._tracer.start_span(
            f"{self._dlq.service} process {msg.subject}",
            context=_PROPAGATOR.extract(headers),
            kind=SpanKind.CONSUMER,
            attributes=attributes,
        )

    async def _process(self, items: list[Item[T]]) -> None:
        try:
            async with heartbeat([i.msg for i in items], self._beat_every):
                rejections = await self._handle(items)
        except Exception as exc:
            if len(items) == 1:
                log.exception("message %s failed", items[0].subject)
                await self._retry_or_dead_letter(items, exc)
                return
            # Isolate a poison message: retry the items one by one so the others still go through.
            # The items waiting for their turn are kept alive too, or JetStream redelivers them meanwhile.
            log.warning("batch of %d failed (%s); retrying one by one", len(items), exc)
            for item in items:
                item.span.add_event("batch failed; retrying alone", {"exception.message": str(exc)[:500]})
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
            await self._retry_or_dead_letter(items, exc)
            return
        await self._settle_with(items, rejections)

    async def _settle_with(self, items: list[Item[T]], rejections: Sequence[Rejection]) -> None:
        spans = {id(i.msg): i.span for i in items}
        for r in rejections:
            await self._reject(r.msg, r.reason, spans.get(id(r.msg), trace.INVALID_SPAN))
        rejected = {id(r.msg) for r in rejections}
        for item in items:
            if id(item.msg) not in rejected:
                await item.msg.ack()

    async def _reject(self, msg: Msg, reason: str, span: Span) -> None:
        span.set_status(Status(StatusCode.ERROR, f"dead-lettered: {reason[:500]}"))
        span.set_attribute("mnemo.dead_lettered", True)
        await self._dlq.send(msg, reason)
        await msg.ack()

    async def _retry_or_dead_letter(self, items: Sequence[Item[T]], exc: Exception) -> None:
        for item in items:
            attempt = item.msg.metadata.num_delivered
            if attempt >= self._max_deliver:
                await self._reject(item.msg, f"failed {attempt} times, last: {type(exc).__name__}: {exc}", item.span)
            else:
                item.span.record_exception(exc)
                item.span.set_status(Status(StatusCode.ERROR, f"attempt {attempt} failed; retried later"))
                await item.msg.nak(delay=self._backoff(attempt))


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
