"""The JetStream context every ``publish_async`` caller uses: one that reads only JetStream's answers.

An async publish's reply inbox hears every answer to the published message, not only the stream's. nats-py 2.16
json-decodes whatever arrives first, and three answers break that (upstream issues still open):

- a status without a body (``408`` while a stream's leader moves): ``json.loads(b"")`` raises inside the
  library's reader task (nats-io/nats.py#639) and the future waits for the caller's timeout;
- an error object (``{"error": {...}}``): ``APIError.from_error`` raises instead of returning (nats.py#985),
  with the same result;
- an answer that is not the stream's: a core subscriber of the subject that replies (FastStream answers a
  message that has a reply subject with an empty body unless told ``no_reply``) gets there first, and its
  reply is read as a malformed PubAck while the real one is still on its way.

Each time the library logs a traceback ("nats: encountered error"). Here a reply settles the future only when
JetStream sent it: a PubAck (``stream`` and ``seq``), an error object, or a status; anything else is ignored and
the stream's own PubAck (or the caller's timeout) settles it. Overriding the one handler is the smallest change
that does it; drop this module once nats-py reads its replies this way itself.

It also keeps a run of async publishes in one socket write (:meth:`SettledJetStream.publish_async`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext, api
from nats.js.client import NO_RESPONDERS_STATUS
from nats.js.errors import APIError, NoStreamResponseError

log = logging.getLogger(__name__)


def read_reply(msg: Msg) -> api.PubAck | Exception | None:
    """What a reply on a publish's inbox says: JetStream's PubAck or refusal, or None when the stream did not
    send it. The body is decoded once, here (the library's handler would decode it again)."""
    status = (msg.headers or {}).get(api.Header.STATUS)
    if status == NO_RESPONDERS_STATUS:
        return NoStreamResponseError()  # as nats-py reports it: no stream listens on the subject
    if status:
        description = (msg.headers or {}).get(api.Header.DESCRIPTION) or f"status {status}"
        return APIError(code=int(status) if status.isdigit() else None, description=description)
    try:
        body = json.loads(msg.data)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    if isinstance(error := body.get("error"), dict):
        return APIError(code=error.get("code"), err_code=error.get("err_code"), description=error.get("description"))
    return api.PubAck.from_response(body) if "stream" in body and "seq" in body else None


class SettledJetStream(JetStreamContext):
    """``JetStreamContext`` whose async-publish futures are settled by JetStream's answers only (module doc)."""

    async def publish_async(
        self,
        subject: str,
        payload: bytes = b"",
        wait_stall: float | None = None,
        stream: str | None = None,
        headers: dict[str, str] | None = None,
        msg_ttl: float | None = None,
    ) -> asyncio.Future[api.PubAck]:
        """nats-py's, without the stall bound while a slot is free. nats-py bounds the wait for a free slot with
        ``asyncio.wait_for``, which on Python 3.11 wraps the acquire in a task and a timer even when it cannot
        wait: every publish then yields to the event loop, and the client's flusher writes each message to the
        socket by itself, one system call per message (in py-spy, 10 % of a loaded ingest process's CPU in
        ``make bench-ingest`` and 27 % of a cluster replica's in ``make bench-scale``, 2026-11-27). With a free
        slot the acquire takes it at once, so a run of publishes goes out in one write at the caller's next
        wait. A slot taken meanwhile (only the first publish awaits setting up its reply inbox) is freed by
        its PubAck or by its own publisher's timeout, which cancels it."""
        if not self._publish_async_pending_semaphore.locked():
            wait_stall = None
        return await super().publish_async(
            subject, payload, wait_stall=wait_stall, stream=stream, headers=headers, msg_ttl=msg_ttl
        )

    async def _handle_async_reply(self, msg: Msg) -> None:
        # The token is the reply subject's last part: publish_async builds it as <async prefix>.<token>.
        future: asyncio.Future[Any] | None = self._publish_async_futures.get(msg.subject.rsplit(".", 1)[-1])
        if future is None or future.done():
            return
        answer = read_reply(msg)
        if answer is None:
            log.debug("ignored a reply to a JetStream publish that the stream did not send: %r", msg.data[:80])
        elif isinstance(answer, Exception):
            log.debug("JetStream refused a publish: %r", answer)
            future.set_exception(answer)
        else:
            future.set_result(answer)


def jetstream(nc: NatsClient, **opts: Any) -> JetStreamContext:
    """The JetStream context for ``nc`` (``nc.jetstream(**opts)``'s options) that publishers use."""
    return SettledJetStream(nc, **opts)
