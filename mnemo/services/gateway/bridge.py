"""The gateway's only way to the stack: NATS, as any platform would use it.

An event is published to JetStream with ``Nats-Msg-Id`` = ``<tenant>:<request id>`` (the request's
``Idempotency-Key`` or ``X-Request-Id`` header, else a digest of the subject and body), so a retried HTTP
request inside JetStream's duplicate window is stored once; the tenant prefix keeps one tenant's ids from
colliding with (and so suppressing) another's. A request-reply call carries the same id in ``Nats-Msg-Id``
and ``X-Request-Id`` headers for tracing; the services' operations are idempotent on their own (derived ids,
``created``/``deleted`` flags). Every failure becomes a :class:`GatewayError` with an HTTP status.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.errors import (
    ConnectionClosedError,
    ConnectionDrainingError,
    ConnectionReconnectingError,
    MaxPayloadError,
    NoRespondersError,
    OutboundBufferLimitError,
)
from nats.errors import TimeoutError as NatsTimeout
from nats.js.errors import APIError, NoStreamResponseError

#: The services' ``ErrorReply`` codes and the HTTP status each becomes (an unknown code: 502).
STATUS_OF_CODE: dict[str, int] = {
    "bad_request": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "payload_too_large": 413,
    "rate_limited": 429,
    "internal": 502,  # the service failed: the gateway is fine, its upstream is not
    "unavailable": 503,
    "timeout": 504,
}


DOWN = (OutboundBufferLimitError, ConnectionClosedError, ConnectionDrainingError, ConnectionReconnectingError)


class GatewayError(Exception):
    def __init__(self, status: int, code: str, message: str, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after_s = status, code, message, retry_after_s


@dataclass(frozen=True)
class Published:
    stream: str
    seq: int
    duplicate: bool
    msg_id: str


def msg_id(tenant: str, request_id: str | None, subject: str, body: bytes) -> str:
    """``<tenant>:<request id>``; without one, a digest of what is published, so a plain retry of the same
    request is still a duplicate."""
    if request_id:
        return f"{tenant}:{request_id}"
    digest = hashlib.sha256(subject.encode() + b"\n" + body).hexdigest()
    return f"{tenant}:sha256:{digest}"


class NatsBridge:
    def __init__(self, nc: NatsClient, *, request_timeout_s: float, publish_timeout_s: float) -> None:
        self.nc = nc
        self._js = nc.jetstream()
        self._request_timeout = request_timeout_s
        self._publish_timeout = publish_timeout_s

    async def publish(self, subject: str, body: bytes, message_id: str) -> Published:
        try:
            ack = await self._js.publish(
                subject, body, timeout=self._publish_timeout, headers={"Nats-Msg-Id": message_id}
            )
        except (NatsTimeout, TimeoutError) as exc:
            raise GatewayError(
                504, "timeout", f"JetStream did not acknowledge within {self._publish_timeout}s"
            ) from exc
        except (NoRespondersError, NoStreamResponseError) as exc:
            raise GatewayError(503, "unavailable", "no JetStream stream takes this subject") from exc
        except MaxPayloadError as exc:
            raise GatewayError(413, "payload_too_large", str(exc) or "over the NATS server's max_payload") from exc
        except DOWN as exc:
            raise GatewayError(503, "unavailable", "the NATS connection is down") from exc
        except APIError as exc:
            raise GatewayError(503, "unavailable", f"JetStream refused the event: {exc.description}") from exc
        return Published(stream=ack.stream, seq=ack.seq, duplicate=bool(ack.duplicate), msg_id=message_id)

    async def request(self, subject: str, body: bytes, message_id: str) -> dict[str, Any]:
        """The reply as a dict; an ``ErrorReply`` raises :class:`GatewayError` with its code's status."""
        headers = {"Nats-Msg-Id": message_id, "X-Request-Id": message_id}
        try:
            msg = await self.nc.request(subject, body, timeout=self._request_timeout, headers=headers)
        except (NatsTimeout, TimeoutError) as exc:
            raise GatewayError(504, "timeout", f"no reply within {self._request_timeout}s") from exc
        except NoRespondersError as exc:
            raise GatewayError(503, "unavailable", f"no service answers {subject}") from exc
        except MaxPayloadError as exc:
            raise GatewayError(413, "payload_too_large", str(exc) or "over the NATS server's max_payload") from exc
        except DOWN as exc:
            raise GatewayError(503, "unavailable", "the NATS connection is down") from exc
        try:
            reply = json.loads(msg.data)
        except ValueError as exc:
            raise GatewayError(502, "internal", f"{subject} answered with invalid JSON") from exc
        if not isinstance(reply, dict):
            raise GatewayError(502, "internal", f"{subject} answered with a non-object")
        error = reply.get("error")
        if isinstance(error, dict) and set(reply) == {"error"}:
            code = str(error.get("code") or "internal")
            raise GatewayError(STATUS_OF_CODE.get(code, 502), code, str(error.get("message") or ""))
        return reply
