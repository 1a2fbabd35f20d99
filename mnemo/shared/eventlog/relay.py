"""The outbox relay: every committed event reaches JetStream, even if its appender dies right after the commit.

Two paths, one idempotency key:

- Fast path: an appender calls :meth:`Relay.publish_committed` right after a successful append. The events
  are published all at once (pipelined), each waiting for its JetStream ack, then confirmed with ONE
  ``mark_published`` call for the whole batch (on MongoDB one inserted receipt, never an update per event).
- Recovery path: :meth:`Relay.run` periodically republishes events still unpublished after ``min_age_s``
  (the appender crashed, NATS was down, the ack was lost). ``min_age_s`` keeps it from racing the fast path,
  and so does ``grace_s``: for that long after their append, events whose fast path is still on its way (this
  process's own, or those of a writer whose recovery loop is alive) are left to it, however slow it is under
  load (``mnemo.shared.eventlog.outbox``).
  A round while nothing was appended costs one read of the outbox's intents (see
  ``mnemo.shared.eventlog.outbox``), so every replica runs the loop, every ``interval_s`` while it finds
  something and backing off to half ``min_age_s`` while it does not.

Both publish with ``Nats-Msg-Id = event_id`` (and the event's W3C ``traceparent`` header when it has one, so
the consumers' per-message spans continue the trace of the work that produced the event) to
``log_subject(type)``; the stream's duplicate window
(:data:`mnemo.shared.subjects.DUPLICATE_WINDOW_S`) turns a double publish into one stored message. Past the
window a consumer still sees the same ``event_id`` and must treat it idempotently (at-least-once). The body
is the codec's wire form: the stored, still encrypted document, so JetStream holds ciphertext only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, Protocol

from nats.js import JetStreamContext

from mnemo.shared import subjects
from mnemo.shared.eventlog.codec import EventCodec, StoredDoc
from mnemo.shared.eventlog.port import EventStore
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.streams import ensure_stream

log = logging.getLogger(__name__)

MSG_ID_HEADER = "Nats-Msg-Id"
TRACEPARENT_HEADER = "traceparent"


@dataclass(frozen=True)
class Outgoing:
    """One message for JetStream: the log subject, the wire body, its dedupe id, its trace context."""

    subject: str
    data: bytes
    msg_id: str
    traceparent: str | None = None

    def headers(self) -> dict[str, str]:
        headers = {MSG_ID_HEADER: self.msg_id}
        if self.traceparent:
            headers[TRACEPARENT_HEADER] = self.traceparent
        return headers


class JetStreamPublisher(Protocol):
    async def publish_all(self, messages: Sequence[Outgoing]) -> list[BaseException | None]:
        """Publish every message, all in flight at once; per message None once JetStream acknowledged it
        (stored or deduplicated), else the reason it was not."""
        ...


class NatsJetStreamPublisher:
    """nats-py adapter on ``publish_async``: every message goes out at once and one timeout covers the PubAcks
    (a ``js.publish`` per message costs a request task and a timer each: ~10% of ingest's CPU at full rate,
    measured with py-spy during ``make bench-ingest``). A duplicate within the window is acked too."""

    def __init__(self, js: JetStreamContext, timeout: float = 5.0) -> None:
        self.js = js
        self.timeout = timeout

    async def publish_all(self, messages: Sequence[Outgoing]) -> list[BaseException | None]:
        outcomes: list[BaseException | None] = [None] * len(messages)
        acks: dict[asyncio.Future[Any], int] = {}
        for i, m in enumerate(messages):
            try:
                acks[await self.js.publish_async(m.subject, m.data, wait_stall=self.timeout, headers=m.headers())] = i
            except Exception as unsent:  # connection closed, too many stalled: the relay retries it
                outcomes[i] = unsent
        if acks:
            _, late = await asyncio.wait(acks, timeout=self.timeout)
            for future in late:
                future.cancel()
                outcomes[acks[future]] = TimeoutError(f"no PubAck within {self.timeout}s")
        for future, i in acks.items():
            if not future.cancelled() and (refused := future.exception()) is not None:
                outcomes[i] = refused
        return outcomes


async def ensure_log_stream(js: JetStreamContext) -> None:
    """Create or update the MNEMO_LOG stream (file storage, dedupe window); safe from every replica."""
    await ensure_stream(js, subjects.LOG_STREAM, subjects.LOG_STREAM_SUBJECTS)


@dataclass(eq=False)
class Relay:
    store: EventStore
    publisher: JetStreamPublisher
    codec: EventCodec
    _: KW_ONLY
    min_age_s: float = 5.0
    grace_s: float = 60.0
    interval_s: float = 1.0
    batch_size: int = 500
    max_in_flight: int = 256

    def __post_init__(self) -> None:
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()  # set by stop() and by a failed fast-path publish

    def _outgoing(self, doc: StoredDoc) -> Outgoing:
        eid = str(doc.get("event_id", doc.get("_id")))  # codec form or a raw MongoDB document
        return Outgoing(subjects.log_subject(doc["type"]), self.codec.to_wire(doc), eid, doc.get("traceparent"))

    async def publish(self, events: Sequence[EventEnvelope | StoredDoc]) -> list[str]:
        """Publish (``max_in_flight`` at a time), mark the acknowledged ones published; return the ids that failed."""
        docs = [e if isinstance(e, dict) else await self.codec.encode(e) for e in events]
        if not docs:
            return []
        done: list[str] = []
        failed: list[str] = []
        first: BaseException | None = None
        for i in range(0, len(docs), self.max_in_flight):
            messages = [self._outgoing(d) for d in docs[i : i + self.max_in_flight]]
            for m, outcome in zip(messages, await self.publisher.publish_all(messages), strict=True):
                (done if outcome is None else failed).append(m.msg_id)
                first = first or outcome
        if failed:
            log.warning("publish of %d event(s) failed (the relay will retry): %r", len(failed), first)
            await self.store.publish_failed(failed)
            self._wake.set()
        await self.store.mark_published(done)
        return failed

    async def publish_committed(self, events: Sequence[EventEnvelope | StoredDoc]) -> None:
        """Fast path after a successful append. Never raises for a failed publish: the events stay
        unpublished in the log and the recovery loop republishes them."""
        try:
            await self.publish(events)
        except Exception:
            log.exception("publishing %d committed event(s) failed; the relay loop will retry", len(events))

    async def recover_once(self) -> int:
        """Republish one batch of events unpublished for ``min_age_s``; the number published."""
        pending = await self.store.unpublished(self.min_age_s, self.batch_size, grace_s=self.grace_s)
        failed = await self.publish(pending)
        return len(pending) - len(failed)

    async def run(self) -> None:
        """The recovery loop until :meth:`stop` (or cancellation). Full batches are drained back to back; after
        a round that found nothing the wait doubles, up to half ``min_age_s`` (an idle round was 30 % of an idle
        ingest replica's CPU in py-spy, 2026-11-27; a round is also this writer's heartbeat, which others read
        as alive for twice ``min_age_s``), and a fast-path publish that fails wakes the loop at once."""
        self._stop.clear()
        wait = self.interval_s
        while not self._stop.is_set():
            full = False
            try:
                published = await self.recover_once()
                full = published >= self.batch_size
                wait = self.interval_s if published else min(2 * wait, max(self.interval_s, self.min_age_s / 2))
            except Exception:
                log.exception("relay recovery round failed; retrying in %.1fs", self.interval_s)
                wait = self.interval_s
            if not full:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), wait)
                if self._wake.is_set():
                    self._wake.clear()
                    wait = self.interval_s

    async def stop(self) -> None:
        self._stop.set()
        self._wake.set()
