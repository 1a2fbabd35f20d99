"""What every route shares: the error shape, the API key check, the request id and the documented responses.

Every failure answers the wire contract's ``ErrorReply`` (``{"error": {"code", "message"}}``) with an HTTP
status: the gateway's own checks (``unauthorized`` 401, ``forbidden`` 403 for a body naming another tenant
than the key's, ``bad_request`` 422 for a body that breaks the schema) and the services' codes mapped by
``bridge.STATUS_OF_CODE``.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from fastapi import Depends, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException

from mnemo.services.gateway.auth import KeyGrant, digest
from mnemo.services.gateway.bridge import GatewayError
from mnemo.shared import subjects
from mnemo_client.wire.contract import ErrorReply

MAX_PROBLEMS = 10
REQUEST_ID_PATTERN = r"^[!-~]{1,200}$"  # printable ASCII: it goes into a NATS header as it is

bearer = HTTPBearer(auto_error=False, description="an API key; it acts for one tenant only")


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    body = {"error": {"code": code, "message": message[:2000]}}
    return JSONResponse(body, status_code=status, headers=headers)


async def on_gateway_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, GatewayError)
    headers = {"Retry-After": str(max(1, math.ceil(exc.retry_after_s)))} if exc.status in (429, 503) else None
    return error_response(exc.status, exc.code, exc.message, headers)


async def on_invalid_request(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e.get('loc', ())) or '<body>'}: {e.get('msg', 'invalid')}"
        for e in list(exc.errors())[:MAX_PROBLEMS]
    )
    return error_response(422, "bad_request", problems or "invalid request")


async def on_http_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "bad_request")
    return error_response(exc.status_code, code, str(exc.detail), dict(exc.headers or {}))


async def key_grant(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> KeyGrant:
    """The tenant the request's API key acts for and whether it holds the engine right (401 without a known key)."""
    if credentials is None:
        raise GatewayError(401, "unauthorized", "send an API key: `Authorization: Bearer <key>`")
    grant: KeyGrant | None = request.app.state.keys.grant_of(credentials.credentials)
    if grant is None:
        raise GatewayError(401, "unauthorized", "unknown API key")
    wait = request.app.state.limiter.take(digest(credentials.credentials))
    if wait is not None:
        raise GatewayError(429, "rate_limited", "this API key is over its request rate; retry later", wait)
    return grant


def request_id(
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            pattern=REQUEST_ID_PATTERN,
            description="your id for this request: a retry with the same key is stored once (JetStream's "
            "`Nats-Msg-Id`, within its 2-minute duplicate window)",
        ),
    ] = None,
    x_request_id: Annotated[
        str | None,
        Header(alias="X-Request-Id", pattern=REQUEST_ID_PATTERN, description="as Idempotency-Key, if that is absent"),
    ] = None,
) -> str | None:
    return idempotency_key or x_request_id


async def key_tenant(grant: Annotated[KeyGrant, Depends(key_grant)]) -> str:
    """The tenant the request's API key acts for (401 without a known key)."""
    return grant.tenant


def check_tenant(body_tenant: str, key_tenant: str) -> None:
    if body_tenant != key_tenant:
        raise GatewayError(403, "forbidden", "this API key cannot act for the tenant named in the body")


def check_engine(subject: str, grant: KeyGrant) -> None:
    """The memory API's engine calls take a key with the engine right (docs/memory-api.md)."""
    if subject in subjects.MEMORY_ENGINE_CALLS and not grant.engine:
        raise GatewayError(
            403, "forbidden", "this API key has no engine right: it writes the player:<user_id> namespace only"
        )


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    described = {
        400: "the service refused the request (`bad_request`, saying what is wrong)",
        401: "no API key, or an unknown one",
        403: "the body names another tenant than the key's, or an engine call on a key without the right",
        404: "no such item for this tenant and user (`not_found`)",
        413: "the body is over the NATS server's max_payload",
        422: "the body breaks the schema (`bad_request`, naming the fields)",
        429: "rate limited (`rate_limited`): the key is over MNEMO_GATEWAY__RATE_PER_S; retry after Retry-After",
        502: "the service failed on this request (`internal`; details in its log)",
        503: "no service answers, or NATS is down (`unavailable`); retry later",
        504: "no reply in time (`timeout`)",
    }
    return {s: {"model": ErrorReply, "description": described[s]} for s in statuses}
