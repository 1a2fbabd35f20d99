"""The JetStream context every ``publish_async`` caller uses: one whose PubAck futures always settle.

nats-py 2.16 json-decodes every reply to an async publish. Two replies break that, upstream and still open:

- a status reply without a body (the server answers ``408`` / ``503`` while a stream's leader moves or its
  peers are slow): ``json.loads(b"")`` raises inside the library's subscription task (nats-io/nats.py#639);
- an error body (``{"error": {...}}``): ``APIError.from_error`` raises instead of returning (nats.py#985).

Either way the exception escapes into the library's reader task, which logs it as a traceback ("nats:
encountered error"), and the publisher's future stays pending until the caller's own timeout. Our callers (the
outbox relay, the points writer) survive that, but an operator reads a traceback for an ordinary refusal, and
the publish waits its whole timeout for an answer it already had. Here the reply settles the future: a PubAck,
or the refusal as an ``APIError`` carrying the server's status and description. Overriding the one handler is the
smallest change that fixes it; drop this module once nats-py settles those futures itself.
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
from nats.js.errors import APIError

log = logging.getLogger(__name__)


def refusal(msg: Msg) -> APIError | None:
    """The error a reply to a publish carries (a status without a body, or an ``error`` object); None for a
    PubAck and for "no responders" (503), which the library reads itself (``NoStreamResponseError``)."""
    status = (msg.headers or {}).get(api.Header.STATUS)
    if status == NO_RESPONDERS_STATUS:
        return None
    if not msg.data:
        description = (msg.headers or {}).get(api.Header.DESCRIPTION) or f"status {status}"
        return APIError(code=int(status) if status and status.isdigit() else None, description=description)
    if b'"error"' not in msg.data:  # a PubAck: decoded once, by the library
        return None
    try:
        error = json.loads(msg.data).get("error")
    except (ValueError, AttributeError):
        return APIError(description=f"unreadable PubAck: {msg.data[:80]!r}")
    if not isinstance(error, dict):
        return None
    return APIError(code=error.get("code"), err_code=error.get("err_code"), description=error.get("description"))


class SettledJetStream(JetStreamContext):
    """``JetStreamContext`` whose async-publish replies always settle their future (see the module doc)."""

    async def _handle_async_reply(self, msg: Msg) -> None:
        error = refusal(msg)
        if error is None:
            await super()._handle_async_reply(msg)
            return
        # The token is the reply subject's last part: publish_async builds it as <async prefix>.<token>.
        future: asyncio.Future[Any] | None = self._publish_async_futures.get(msg.subject.rsplit(".", 1)[-1])
        if future is not None and not future.done():
            log.debug("JetStream refused a publish: %s %s", error.code, error.description)
            future.set_exception(error)


def jetstream(nc: NatsClient, **opts: Any) -> JetStreamContext:
    """The JetStream context for ``nc`` (``nc.jetstream(**opts)``'s options) that publishers use."""
    return SettledJetStream(nc, **opts)
