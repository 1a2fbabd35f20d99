"""Chat events to JetStream, each retried until the stream acknowledges it.

``publish`` awaits the acknowledgement (retrying with capped exponential backoff: a timeout, no stream yet, a
reconnect in progress or JetStream answering 503 are all worth another try; the same ``Nats-Msg-Id`` makes a
retry of an event that did land a duplicate JetStream drops). ``submit`` puts the event in a bounded local
buffer and returns at once; one background task sends the buffer in order, each event retried until acked,
so a platform keeps serving its users through a NATS outage and loses nothing while the buffer has room
(``BufferFull`` when it has none: the caller decides to wait, drop or spill). ``flush`` waits for it to drain.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

import nats.errors
from nats.js import JetStreamContext
from nats.js.api import PubAck
from nats.js.errors import APIError, NoStreamResponseError

from mnemo_client.errors import BufferFull, Unavailable

log = logging.getLogger(__name__)
_RETRYABLE = (
    NoStreamResponseError,  # no stream captures the subject (yet): the stack creates it when it starts
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.StaleConnectionError,
    nats.errors.OutboundBufferLimitError,
)


@dataclass(frozen=True)
class Pending:
    subject: str
    body: bytes
    msg_id: str


class Outbox:
    def __init__(
        self,
        js: JetStreamContext,
        *,
        ack_timeout: float = 5.0,
        backoff_max: float = 5.0,
        buffer_size: int = 10_000,
    ) -> None:
        self._js = js
        self._ack_timeout = ack_timeout
        self._backoff_max = backoff_max
        self._queue: asyncio.Queue[Pending] = asyncio.Queue(maxsize=buffer_size)
        self._sender: asyncio.Task[None] | None = None
        self._unacked = 0

    @property
    def buffered(self) -> int:
        """Events submitted and not yet acknowledged (the one being sent included)."""
        return self._unacked

    async def publish(self, item: Pending, *, give_up_after: float | None = 60.0) -> PubAck:
        """Publish until acknowledged; ``Unavailable`` after ``give_up_after`` seconds (None: never give up)."""
        loop = asyncio.get_running_loop()
        deadline = None if give_up_after is None else loop.time() + give_up_after
        delay = 0.05
        while True:
            try:
                return await self._js.publish(
                    item.subject, item.body, timeout=self._ack_timeout, headers={"Nats-Msg-Id": item.msg_id}
                )
            except APIError as exc:
                if exc.code != 503:  # JetStream refused the message itself: retrying cannot help
                    raise
                problem: Exception = exc
            except _RETRYABLE as exc:
                problem = exc
            if deadline is not None and loop.time() + delay > deadline:
                raise Unavailable("unavailable", f"not acknowledged: {problem!r}", subject=item.subject)
            log.debug("publish of %s not acknowledged (%r); retrying in %.2fs", item.msg_id, problem, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, self._backoff_max)

    def submit(self, item: Pending) -> None:
        """Buffer ``item``; the background sender publishes it. ``BufferFull`` when the buffer is full."""
        try:
            self._queue.put_nowait(item)
        except asyncio.QueueFull:
            raise BufferFull(
                "unavailable", f"{self._queue.maxsize} events await acknowledgement", subject=item.subject
            ) from None
        self._unacked += 1
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send_all(), name="mnemo-outbox")

    async def _send_all(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                await self.publish(item, give_up_after=None)
            except Exception:  # refused by JetStream (not retryable): report, keep sending the rest
                log.exception("event %s refused by JetStream; dropped from the buffer", item.msg_id)
            finally:
                self._unacked -= 1
                self._queue.task_done()

    async def flush(self) -> None:
        """Wait until every submitted event is acknowledged (bound it with ``asyncio.timeout``)."""
        await self._queue.join()

    async def close(self) -> None:
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
