"""Request-reply plumbing every answering service shares: raw bodies, strict parsing, one reply per request.

``serve`` declares one subscriber: ``serve(router, subject, service=..., request=Model, call=..., errors=...)``.

The contract (docs/contract.md): every request on a ``mnemo.rpc.*`` subject gets exactly one reply, the reply model or
an ``ErrorReply``, never silence. So bodies are taken as raw bytes (FastStream would otherwise parse JSON
itself and drop an invalid request without a reply), parsed here with the request model (unknown fields
refused when the model forbids them), and every exception becomes an error code: the ones a service names in
``errors`` (``bad_request``, ``not_found``) with their message, a ``mnemo.shared.limits.LimitExceeded`` its own
code (``rate_limited``, ``book_too_large``, ...), anything else ``internal`` with the details in the service
log only. With a ``limiter``, a request naming a ``tenant_id`` first takes a token of its tenant's bucket.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from faststream.nats import NatsRouter
from faststream.nats.message import NatsMessage
from pydantic import BaseModel, ConfigDict, ValidationError

from mnemo.shared import subjects
from mnemo.shared.limits import LimitExceeded, RateLimiter
from mnemo.shared.metrics import RPC_ERRORS, RPC_REQUESTS, RPC_SECONDS
from mnemo_client.wire.contract import ErrorBody, ErrorReply

log = logging.getLogger(__name__)
Req = TypeVar("Req", bound=BaseModel)
Rep = TypeVar("Rep", bound=BaseModel)
MAX_MESSAGE = 2000


async def raw_body(message: NatsMessage) -> bytes:
    """A subscriber decoder that keeps the body as bytes, so that invalid JSON still gets an ErrorReply."""
    return message.body


@functools.cache
def strict(model: type[Req]) -> type[Req]:
    """``model`` refusing unknown fields: on a versioned subject a field this version does not know is a client
    bug (``max_token`` for ``max_tokens``) that silently ignoring would hide. The public models themselves
    ignore extras, so that a newer producer's events still read."""
    config = ConfigDict(**{**model.model_config, "extra": "forbid"})
    subclass: type[Req] = type(f"Strict{model.__name__}", (model,), {"model_config": config})
    return subclass


def error(code: str, message: str) -> ErrorReply:
    return ErrorReply(error=ErrorBody(code=code, message=message[:MAX_MESSAGE]))


def parse(model: type[Req], body: bytes) -> Req | ErrorReply:
    """The request, or a ``bad_request`` naming the first problems (field path and what is wrong)."""
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '<body>'}: {e['msg']}" for e in exc.errors()[:10])
        return error("bad_request", problems)


async def answer(
    model: type[Req],
    body: bytes,
    call: Callable[[Req], Awaitable[Rep]],
    *,
    errors: Mapping[type[Exception], str],
    service: str,
    limiter: RateLimiter | None = None,
) -> Rep | ErrorReply:
    """Parse ``body``, check the tenant's rate, run ``call``; an exception of a type in ``errors`` (first match
    in order) becomes that code with its message, a ``LimitExceeded`` its code, any other ``internal``."""
    request = parse(model, body)
    if isinstance(request, ErrorReply):
        return request
    try:
        tenant_id = getattr(request, "tenant_id", None)
        if limiter is not None and isinstance(tenant_id, str):
            limiter.check(tenant_id)
        return await call(request)
    except LimitExceeded as exc:
        return error(exc.code, str(exc))
    except Exception as exc:  # the caller gets an answer in every case
        for kind, code in errors.items():
            if isinstance(exc, kind):
                return error(code, str(exc))
        log.exception("%s request failed (%s)", service, model.__name__)
        return error("internal", f"{service} request failed; see the service log")


class RpcMeter:
    """One subject's request metrics, its label children bound once: a reply costs two or three calls on them."""

    def __init__(self, subject: str) -> None:
        self._subject = subject
        self._requests = RPC_REQUESTS.labels(subject=subject)
        self._seconds = RPC_SECONDS.labels(subject=subject)
        self._errors: dict[str, Any] = {}

    def answered(self, started: float, reply: object) -> None:
        """``reply`` was sent for a request that arrived at ``started`` (``time.perf_counter``)."""
        self._seconds.observe(time.perf_counter() - started)
        self._requests.inc()
        if isinstance(reply, ErrorReply):
            code = reply.error.code  # the contract's codes: a closed set
            counter = self._errors.get(code)
            if counter is None:
                counter = self._errors[code] = RPC_ERRORS.labels(subject=self._subject, code=code)
            counter.inc()


def serve(
    router: NatsRouter,
    subject: str,
    *,
    service: str,
    request: type[Req],
    call: Callable[[Req], Awaitable[BaseModel]],
    errors: Mapping[type[Exception], str],
    max_workers: int = 1,
    limiter: RateLimiter | None = None,
) -> None:
    """Answer ``subject`` in the service's queue group (replicas share requests, each answered once): the body
    parsed strictly as ``request``, then ``call``'s reply or an ``ErrorReply`` (see :func:`answer`)."""
    model = strict(request)
    meter = RpcMeter(subject)

    @router.subscriber(
        subject,
        queue=subjects.queue_group(service),
        decoder=raw_body,
        max_workers=max_workers,
        title=f"{service}: {subject}",
        description=f"Request {request.__name__}; reply its reply model or ErrorReply.",
    )
    async def on_request(body: bytes) -> Any:
        started = time.perf_counter()
        reply = await answer(model, body, call, errors=errors, service=service, limiter=limiter)
        meter.answered(started, reply)
        return reply
