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
- A ``Staged`` handler overlaps consecutive batches (pipelining). Its first stage runs batch after batch in
  delivery order, inside the fetch loop: the next batch is fetched only once it is done. The completion it
  returns (e.g. projections, publishing, then the acks) runs in the background, completions one after
  another in delivery order, while the next batch goes through its first stage; at most ``in_flight``
  batches are held at once (backpressure: the fetch loop waits for a free slot). A failing first stage is
  isolated message by message right there, after every earlier completion, so the retries keep their order
  before the next batch. The subscriber's graceful shutdown waits for the background completions too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
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
Completion = Callable[[], Awaitable[Sequence[Rejection]]]


@dataclass(frozen=True)
class Staged(Generic[T]):
    """A batch handler in two stages, so that consecutive batches overlap.

    ``first(items)`` does the part that must follow delivery order (batches never overlap in it) and returns
    the completion: the rest of the work, run in the background (completions one at a time, in delivery
    order), returning the rejections like a ``BatchHandler``. Messages are acked after their completion."""

    first: Callable[[list[Item[T]]], Awaitable[Completion]]

    async def run(self, items: list[Item[T]]) -> Sequence[Rejection]:
        """Both stages back to back (retries of a failed batch, message by message)."""
        return await (await self.first(items))()


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
    is the global one (a no-op unless the process configured OpenTelemetry). ``in_flight`` bounds the
    batches a ``Staged`` handler holds at once (1: no overlap); a plain handler takes one batch at a time.
    """

    def __init__(
        self,
        *,
        decode: Decoder[T],
        handle: BatchHandler[T] | Staged[T],
        dead_letters: DeadLetters,
        max_deliver: int,
        ack_wait_s: float,
        backoff: Callable[[int], float] = retry_delay,
        tracer: Tracer | None = None,
        in_flight: int = 2,
    ) -> None:
        self._decode = decode
        self._staged = handle if isinstance(handle, Staged) else None
        self._handle: BatchHandler[T] = handle.run if isinstance(handle, Staged) else handle
        self._dlq = dead_letters
        self._max_deliver = max_deliver
        self._backoff = backoff
        self._beat_every = max(0.5, ack_wait_s / 3)
        self._tracer = tracer or trace.get_tracer(__name__)
        self._slots = asyncio.Semaphore(max(1, in_flight))
        self._completing: set[asyncio.Task[None]] = set()
        self._last: asyncio.Task[None] | None = None  # the latest completion: the next one runs after it

    async def __call__(self, msgs: Sequence[Msg], hold: AbstractContextManager[object] | None = None) -> None:
        """Process one fetched batch. With a ``Staged`` handler this returns after the first stage; ``hold``
        (the subscriber's graceful-shutdown lock) is then held until the batch's completion is done."""
        if self._staged is not None:
            await self._staged_call(self._staged, msgs, hold)
            return
        spans: list[Span] = []
        try:
            items = await self._items(msgs, spans)
            if items:
                await self._process(items)
        finally:
            for span in spans:
                span.end()

    async def drain(self) -> None:
        """Wait for the background completions (a ``Staged`` handler's) to finish."""
        while self._completing:
            await asyncio.wait(set(self._completing))

    async def _items(self, msgs: Sequence[Msg], spans: list[Span]) -> list[Item[T]]:
        """Decode ``msgs`` (dead-lettering the invalid ones); each message's span is added to ``spans``."""
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
        return items

    async def _staged_call(
        self, staged: Staged[T], msgs: Sequence[Msg], hold: AbstractContextManager[object] | None
    ) -> None:
        async with heartbeat(msgs, self._beat_every):
            await self._slots.acquire()  # backpressure: wait for a batch in flight to complete
        spans: list[Span] = []
        handed_over = False
        try:
            items = await self._items(msgs, spans)
            if not items:
                return
            try:
                async with heartbeat([i.msg for i in items], self._beat_every):
                    completion = await staged.first(items)
            except Exception as exc:
                # Retried right here (after every earlier completion), before the next batch is fetched.
                async with heartbeat([i.msg for i in items], self._beat_every):
                    await self._after_earlier()
                await self._failed(items, exc)
                return
            if hold is not None:
                hold.__enter__()
            task = asyncio.create_task(self._complete(items, spans, completion, self._last, hold))
            self._last = task
            self._completing.add(task)
            task.add_done_callback(self._completing.discard)
            handed_over = True
        finally:
            if not handed_over:
                for span in spans:
                    span.end()
                self._slots.release()

    async def _after_earlier(self) -> None:
        if self._last is not None and not self._last.done():
            await asyncio.wait({self._last})

    async def _complete(
        self,
        items: list[Item[T]],
        spans: list[Span],
        completion: Completion,
        previous: asyncio.Task[None] | None,
        hold: AbstractContextManager[object] | None,
    ) -> None:
        try:
            async with heartbeat([i.msg for i in items], self._beat_every):
                if previous is not None and not previous.done():
                    await asyncio.wait({previous})
                try:
                    rejections = await completion()
                except Exception as exc:
                    await self._failed(items, exc)
                    return
            await self._settle_with(items, rejections)
        except Exception:  # acks or dead letters failed: JetStream redelivers what was not settled
            log.exception("settling a batch of %d failed", len(items))
        finally:
            for span in spans:
                span.end()
            self._slots.release()
            if hold is not None:
                hold.__exit__(None, None, None)

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
            await self._failed(items, exc)
            return
        await self._settle_with(items, rejections)

    async def _failed(self, items: list[Item[T]], exc: Exception) -> None:
        """A batch failed: retry its items one by one (or nak / dead-letter a lone item)."""
        if len(items) == 1:
            log.error("message %s failed", items[0].subject, exc_info=exc)
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
    async def on_batch(message: NatsBatchMessage = Context("message"), subscriber: Any = Context("handler_")) -> None:
        # The subscriber's graceful-shutdown lock: held by FastStream while this call runs, and by the
        # consumer until a staged batch's background completion is done, so ``broker.stop()`` waits for it.
        lock = getattr(subscriber, "lock", None)
        await consumer(message.raw_message, lock if isinstance(lock, AbstractContextManager) else None)
