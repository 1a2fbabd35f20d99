"""The batch consumer: decode, per-message spans, handle (plain or staged), ack, retry or dead-letter."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from typing import Generic

from nats.aio.msg import Msg
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from pymongo.errors import ConnectionFailure

from mnemo.shared import subjects
from mnemo.shared.crypto import KeyErased
from mnemo.shared.delivery.dead_letters import DeadLetters, heartbeat, retry_delay
from mnemo.shared.delivery.meter import DeliveryMeter
from mnemo.shared.delivery.order import OrderGate
from mnemo.shared.delivery.types import (
    _PROPAGATOR,
    BatchHandler,
    Completion,
    Decoder,
    Item,
    NotHandled,
    Rejection,
    Staged,
    T,
)

log = logging.getLogger(__name__)

#: What a decode can meet that says nothing about the payload: a decrypting decoder reads the tenant's data
#: key from the key store (MongoDB), which may be down for a while (``make chaos``, 2026-11-27: an event was
#: dead-lettered as an invalid payload on ``ServerSelectionTimeoutError`` while SecantusDB was stopped).
UNAVAILABLE: tuple[type[Exception], ...] = (ConnectionFailure, ConnectionError, TimeoutError)


class Fenced(Exception):
    """The consumer's ``may_begin`` said no: the batch is handed back untried."""


class BatchConsumer(Generic[T]):
    """Runs one fetched batch through ``decode`` then ``handle`` with the semantics in the module doc.

    ``backoff(attempt)`` is the nak delay in seconds after the ``attempt``-th failed delivery. ``tracer``
    records the per-message spans; services pass their own provider's (``mnemo.shared.telemetry``), the default
    is the global one (a no-op unless the process configured OpenTelemetry). ``in_flight`` bounds the
    batches a ``Staged`` handler holds at once (1: no overlap); a plain handler takes one batch at a time.
    ``gate`` (a ``Staged`` handler's order across replicas, :mod:`mnemo.shared.delivery.order`): a batch's first stage
    waits for its turn in stream order, and a failed first stage is retried in place (``max_deliver`` times,
    with backoff) before any of its messages is naked, so a database outage never lets later messages of a
    conversation overtake earlier ones; the one-by-one retry of a batch that still fails stops at the first
    message that fails again and hands back those after it (``_hand_back``).
    ``may_begin`` (a ``Staged`` handler's fence, e.g. ingest's ``Lease.fresh``): asked before every attempt at a
    first stage; False hands the batch back untried (``_fenced``), as another consumer may own the messages now.
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
        gate: OrderGate | None = None,
        may_begin: Callable[[], bool] | None = None,
    ) -> None:
        self._decode = decode
        self._may_begin = may_begin
        self._staged = handle if isinstance(handle, Staged) else None
        self._handle: BatchHandler[T] = handle.run if isinstance(handle, Staged) else handle
        self._dlq = dead_letters
        self._max_deliver = max_deliver
        self._backoff = backoff
        self._beat_every = max(0.5, ack_wait_s / 3)
        self._ack_wait_s = ack_wait_s
        # JetStream stops redelivering after ``max_deliver + 5`` (subscribe.py): keep a delivery to spare.
        self._last_hand_back = max_deliver + 3
        self._tracer = tracer or trace.get_tracer(__name__)
        self._slots = asyncio.Semaphore(max(1, in_flight))
        self._completing: set[asyncio.Task[None]] = set()
        self._last: asyncio.Task[None] | None = None  # the latest completion: the next one runs after it
        self._gate = gate
        self._meter = DeliveryMeter(dead_letters.service)

    async def __call__(self, msgs: Sequence[Msg], hold: AbstractContextManager[object] | None = None) -> None:
        """Process one fetched batch. With a ``Staged`` handler this returns after the first stage; ``hold``
        (the subscriber's graceful-shutdown lock) is then held until the batch's completion is done."""
        started = self._meter.received(msgs)
        if self._staged is not None:
            parts = self._staged.parts(msgs)
            for k, part in enumerate(parts):  # the later parts' messages are kept alive meanwhile
                async with heartbeat([m for later in parts[k + 1 :] for m in later], self._beat_every):
                    await self._staged_call(self._staged, part, hold, started)
            return
        spans: list[Span] = []
        try:
            items = await self._items(msgs, spans)
            if items:
                await self._process(items)
        finally:
            for span in spans:
                span.end()
            self._meter.settled(started)

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
            except KeyErased:  # its owner was erased (crypto-shredded): gone by design, not a failure
                span.set_attribute("mnemo.erased", True)
                await msg.ack()
                continue
            except NotHandled:
                span.set_attribute("mnemo.not_handled", True)
                await msg.ack()
                continue
            except UNAVAILABLE as exc:  # the key store did not answer (a decrypting decode): the payload may be fine
                await self._retry_later(msg, span, exc)
                continue
            except Exception as exc:  # any other decode failure is permanent for this payload
                await self._reject(msg, f"invalid payload: {type(exc).__name__}: {exc}", span)
                continue
            # Log events carry an event id. Asked only of a recording span: a pydantic model without the
            # attribute answers through its slow ``__getattr__`` (4 % of ingest's CPU, py-spy).
            if span.is_recording() and isinstance(event_id := getattr(value, "event_id", None), str):
                span.set_attribute("mnemo.event_id", event_id)
            items.append(Item(value, msg, span))
        return items

    async def _staged_call(
        self, staged: Staged[T], msgs: Sequence[Msg], hold: AbstractContextManager[object] | None, started: float
    ) -> None:
        async with heartbeat(msgs, self._beat_every):
            await self._slots.acquire()  # backpressure: wait for a batch in flight to complete
        spans: list[Span] = []
        handed_over = False
        try:
            items = await self._items(msgs, spans)
            if not items:
                return
            if self._gate is not None:
                items = await self._admitted(self._gate, items, msgs)
                if not items:
                    return
                # Redelivered messages come first in a batch: stream order is the order to decide them in.
                items.sort(key=lambda i: i.msg.metadata.sequence.stream)
            try:
                async with heartbeat([i.msg for i in items], self._beat_every):
                    first = time.perf_counter()
                    completion = await self._first(staged, items)
                    self._meter.handler(time.perf_counter() - first)
            except Fenced:
                await self._fenced(items)
                return
            except Exception as exc:
                # With a gate the first stage was retried in place for ``ack_wait`` (a database outage that long
                # lets nothing overtake): what still fails holds a message that fails by itself, isolated below.
                # Retried right here (after every earlier completion), before the next batch is fetched.
                async with heartbeat([i.msg for i in items], self._beat_every):
                    if self._last is not None and not self._last.done():
                        await asyncio.wait({self._last})
                await self._failed(items, exc)
                return
            if hold is not None:
                hold.__enter__()
            task = asyncio.create_task(self._complete(items, spans, completion, self._last, hold, started))
            self._last = task
            self._completing.add(task)
            task.add_done_callback(self._completing.discard)
            handed_over = True
        finally:
            if not handed_over:
                for span in spans:
                    span.end()
                self._slots.release()
                self._meter.settled(started)

    async def _admitted(self, gate: OrderGate, items: list[Item[T]], msgs: Sequence[Msg]) -> list[Item[T]]:
        """The items that begin now; the others are handed back (naked with a delay of ``ack_wait``, so the
        earlier messages they wait for, redelivered once their own ``ack_wait`` runs out, are fetched first).
        The whole fetched batch is asked about: its invalid messages, settled already, are part of its run."""
        async with heartbeat([i.msg for i in items], self._beat_every):
            deliveries = [(m.metadata.sequence.consumer, m.metadata.num_delivered) for m in msgs]
            begun = await gate.admit([m.metadata.sequence.stream for m in msgs], deliveries)
        later = [i for i in items if i.msg.metadata.sequence.stream not in begun]
        if not later:
            return items
        if any(i.msg.metadata.num_delivered >= self._last_hand_back for i in later):
            log.warning("%d messages waited for earlier ones through %d deliveries; beginning them", len(later),
                        self._last_hand_back)  # fmt: skip
            gate.begin_anyway([i.msg.metadata.sequence.stream for i in later])
            return items
        log.info("%d of %d messages wait for earlier ones still out; handed back", len(later), len(items))
        for item in later:
            await item.msg.nak(delay=self._ack_wait_s)
        return [i for i in items if i.msg.metadata.sequence.stream in begun]

    async def _first(self, staged: Staged[T], items: list[Item[T]]) -> Completion:
        """The first stage; with a gate, retried in place (for ``ack_wait`` at least, backoff capped at 5 s) so
        a database outage that short makes nothing later overtake this batch."""
        if self._gate is None:
            self._check_fence()
            return await staged.first(items)
        deadline = time.monotonic() + self._ack_wait_s
        attempt = 1
        while True:
            self._check_fence()  # a retry begins the batch again: not once the lease is stale
            try:
                return await staged.first(items)
            except Exception as exc:
                if attempt >= self._max_deliver and time.monotonic() >= deadline:
                    raise
                log.warning("batch of %d failed (attempt %d), retrying in place: %s", len(items), attempt, exc)
                await asyncio.sleep(min(5.0, self._backoff(attempt)))
                attempt += 1

    def _check_fence(self) -> None:
        if self._may_begin is not None and not self._may_begin():
            raise Fenced

    async def _fenced(self, items: Sequence[Item[T]]) -> None:
        """Hand a batch back untried: this consumer may no longer begin batches (its partition's lease is stale, so
        another replica may hold the partition and have remade its durable). Naked at once: on a durable remade
        elsewhere a nak changes nothing, on one still this replica's it frees the messages for the next holder."""
        log.warning("%d messages handed back untried: this consumer may no longer begin batches", len(items))
        if self._gate is not None:
            self._gate.abandon([i.msg.metadata.sequence.stream for i in items])
        for item in items:
            item.span.add_event("handed back untried: the consumer's lease is stale")
            await item.msg.nak()

    async def _complete(
        self,
        items: list[Item[T]],
        spans: list[Span],
        completion: Completion,
        previous: asyncio.Task[None] | None,
        hold: AbstractContextManager[object] | None,
        started: float,
    ) -> None:
        try:
            async with heartbeat([i.msg for i in items], self._beat_every):
                if previous is not None and not previous.done():
                    await asyncio.wait({previous})
                try:
                    begun = time.perf_counter()
                    rejections = await completion()
                    self._meter.handler(time.perf_counter() - begun)
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
            self._meter.settled(started)

    def _start_span(self, msg: Msg) -> Span:
        """The message's CONSUMER span, child of the context its producer put in the headers (a new trace
        when there is none)."""
        headers = msg.headers or {}
        destination = subjects.destination(msg.subject)  # a keyed subject's ids stay out of the span's name
        attributes = {
            "messaging.system": "nats",
            "messaging.operation": "process",
            "messaging.destination.name": destination,
        }
        if msg_id := headers.get("Nats-Msg-Id"):
            attributes["messaging.message.id"] = msg_id
        return self._tracer.start_span(
            f"{self._dlq.service} process {destination}",
            context=_PROPAGATOR.extract(headers),
            kind=SpanKind.CONSUMER,
            attributes=attributes,
        )

    async def _process(self, items: list[Item[T]]) -> None:
        try:
            async with heartbeat([i.msg for i in items], self._beat_every):
                rejections = await self._timed_handle(items)
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
            for position, item in enumerate(items):
                if self._may_begin is not None and not self._may_begin():  # each retry begins a message again
                    await self._fenced(items[position:])
                    return
                if not await self._settle([item]) and self._gate is not None:
                    await self._hand_back(items[position + 1 :])
                    return

    async def _timed_handle(self, items: list[Item[T]]) -> Sequence[Rejection]:
        begun = time.perf_counter()
        try:
            return await self._handle(items)
        finally:
            self._meter.handler(time.perf_counter() - begun)

    async def _settle(self, items: list[Item[T]]) -> bool:
        """Handle ``items`` again; False when they failed and were handed back for a later delivery (True:
        handled, refused or dead-lettered: settled)."""
        try:
            async with heartbeat([i.msg for i in items], self._beat_every):
                rejections = await self._timed_handle(items)
        except Exception as exc:
            log.exception("message %s failed", items[0].subject)
            return await self._retry_or_dead_letter(items, exc)
        await self._settle_with(items, rejections)
        return True

    async def _hand_back(self, items: Sequence[Item[T]]) -> None:
        """With a gate, what follows a message that failed alone is not tried before it: tried now, it could be
        recorded ahead of it (a batch retried one by one as the database came back: its first item still failed,
        those after it went through). Handed back, naked with a delay of ``ack_wait`` (the failed one's backoff
        is at most that), they are no longer begun here: later batches wait for them, and the gate begins them
        after the one that failed."""
        if not items:
            return
        assert self._gate is not None
        log.info("%d messages after one that failed are handed back, to follow it", len(items))
        self._gate.abandon([i.msg.metadata.sequence.stream for i in items])
        for item in items:
            item.span.add_event("handed back behind an earlier message that failed")
            await item.msg.nak(delay=self._ack_wait_s)

    async def _settle_with(self, items: list[Item[T]], rejections: Sequence[Rejection]) -> None:
        spans = {id(i.msg): i.span for i in items}
        for r in rejections:
            await self._reject(r.msg, r.reason, spans.get(id(r.msg), trace.INVALID_SPAN))
        rejected = {id(r.msg) for r in rejections}
        for item in items:
            if id(item.msg) not in rejected:
                await item.msg.ack()
        self._meter.handled(len(items) - len(rejected))

    async def _reject(self, msg: Msg, reason: str, span: Span) -> None:
        span.set_status(Status(StatusCode.ERROR, f"dead-lettered: {reason[:500]}"))
        span.set_attribute("mnemo.dead_lettered", True)
        await self._dlq.send(msg, reason)
        await msg.ack()

    async def _retry_or_dead_letter(self, items: Sequence[Item[T]], exc: Exception) -> bool:
        """Each of ``items`` naked with backoff or dead-lettered; True when none was naked (all settled)."""
        settled = True
        for item in items:
            settled = await self._retry_later(item.msg, item.span, exc) and settled
        return settled

    async def _retry_later(self, msg: Msg, span: Span, exc: Exception) -> bool:
        """Nak ``msg`` with backoff (False), or dead-letter it once it failed ``max_deliver`` times (True)."""
        attempt = msg.metadata.num_delivered
        if attempt >= self._max_deliver:
            await self._reject(msg, f"failed {attempt} times, last: {type(exc).__name__}: {exc}", span)
            return True
        self._meter.failed()
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, f"attempt {attempt} failed; retried later"))
        if self._gate is not None:  # later batches wait for it again
            self._gate.abandon([msg.metadata.sequence.stream])
        await msg.nak(delay=self._backoff(attempt))
        return False
