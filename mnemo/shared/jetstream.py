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
"""

from __future__ import annotations

import asyncio
import json
import logging
from enum import Enum
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext, api
from nats.js.client import NO_RESPONDERS_STATUS
from nats.js.errors import APIError

log = logging.getLogger(__name__)


class Answer(Enum):
    PUB_ACK = "pub_ack"  # the library reads it (and "no responders", which it maps to NoStreamResponseError)
    NOT_JETSTREAM = "not_jetstream"  # another subscriber's reply: wait for the stream's


def read_reply(msg: Msg) -> Answer | APIError:
    """What a reply on a publish's inbox is: a PubAck for the library, JetStream's refusal, or not JetStream's."""
    status = (msg.headers or {}).get(api.Header.STATUS)
    if status == NO_RESPONDERS_STATUS:
        return Answer.PUB_ACK
    if status:
        description = (msg.headers or {}).get(api.Header.DESCRIPTION) or f"status {status}"
        return APIError(code=int(status) if status.isdigit() else None, description=description)
    try:
        body = json.loads(msg.data)
    except ValueError:
        return Answer.NOT_JETSTREAM
    if not isinstance(body, dict):
        return Answer.NOT_JETSTREAM
    if isinstance(error := body.get("error"), dict):
        return APIError(code=error.get("code"), err_code=error.get("err_code"), description=error.get("description"))
    return Answer.PUB_ACK if "stream" in body and "seq" in body else Answer.NOT_JETSTREAM


class SettledJetStream(JetStreamContext):
    """``JetStreamContext`` whose async-publish futures are settled by JetStream's answers only (module doc)."""

    async def _handle_async_reply(self, msg: Msg) -> None:
        answer = read_reply(msg)
        if answer is Answer.PUB_ACK:
            await super()._handle_async_reply(msg)
        elif answer is Answer.NOT_JETSTREAM:
            log.debug("ignored a reply to a JetStream publish that the stream did not send: %r", msg.data[:80])
        else:
            # The token is the reply subject's last part: publish_async builds it as <async prefix>.<token>.
            future: asyncio.Future[Any] | None = self._publish_async_futures.get(msg.subject.rsplit(".", 1)[-1])
            if future is not None and not future.done():
                log.debug("JetStream refused a publish: %s %s", answer.code, answer.description)
                future.set_exception(answer)


def jetstream(nc: NatsClient, **opts: Any) -> JetStreamContext:
    """The JetStream context for ``nc`` (``nc.jetstream(**opts)``'s options) that publishers use."""
    return SettledJetStream(nc, **opts)
