"""HTTP gateway wiring: a FastAPI app serving every public operation of the wire contract over NATS.

``create_app(settings, nats_servers)`` builds the app; its lifespan connects to NATS (or uses the client
given, in tests). Each operation of ``operations.OPERATIONS`` is ``POST /v1/...``: chat events are published
to JetStream and answered ``202`` with the stream position (``Accepted``); request-reply operations answer
the service's reply model, ``/v1/lore/export`` streamed. The body is the wire contract's model, checked
against the API key's tenant, and what is forwarded is the validated model (so the service sees the tenant
that was checked). The gateway imports no service: it is a NATS client like any platform. Run it with
``mnemo gateway`` / ``python -m mnemo.services.gateway``, or inside ``mnemo run --gateway``.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any

import nats
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from nats.aio.client import Client as NatsClient
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from mnemo.services.gateway import web
from mnemo.services.gateway.auth import KeyGrant, KeyRing
from mnemo.services.gateway.bridge import GatewayError, NatsBridge, msg_id
from mnemo.services.gateway.export import export_chunks
from mnemo.services.gateway.limits import ApiKeyRateLimiter
from mnemo.services.gateway.operations import OPERATIONS, GatewayRoute
from mnemo.services.gateway.operator import add_operator_views
from mnemo.services.gateway.settings import GatewaySettings
from mnemo.services.gateway.workbench import add_workbench
from mnemo.shared import subjects

EVENT_ERRORS = (400, 401, 403, 413, 422, 429, 503, 504)
RPC_ERRORS = (400, 401, 403, 404, 413, 422, 429, 502, 503, 504)


class Accepted(BaseModel):
    """A chat event stored in JetStream (ingest takes it from there)."""

    subject: str = Field(..., description="the NATS subject it was published on")
    stream: str = Field(..., description="the JetStream stream holding it")
    seq: int = Field(..., description="its sequence in the stream (the first one's, for a duplicate)")
    duplicate: bool = Field(..., description="true when this request id was already stored: nothing new")
    msg_id: str = Field(..., description="the `Nats-Msg-Id` it was published with: `<tenant>:<request id>`")


class Health(BaseModel):
    status: str = Field(..., description="`ok`, or `unavailable` while NATS is not connected")


def create_app(
    settings: GatewaySettings,
    nats_servers: list[str],
    *,
    nc: NatsClient | None = None,
    connect_options: dict[str, Any] | None = None,
) -> FastAPI:
    """``connect_options``: credentials and TLS for ``nats.connect`` (``mnemo.shared.natsconn.connect_options``)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own = nc is None
        options = connect_options or {}
        client = nc or await nats.connect(nats_servers, name="mnemo-gateway", max_reconnect_attempts=-1, **options)
        app.state.bridge = NatsBridge(
            client, request_timeout_s=settings.request_timeout_s, publish_timeout_s=settings.publish_timeout_s
        )
        try:
            yield
        finally:
            if own:
                with contextlib.suppress(Exception):
                    await client.drain()

    app = FastAPI(
        title="mnemo HTTP gateway",
        version="1.0.0",
        description="The public wire contract v1 of mnemo over HTTP: each `POST /v1/...` is the NATS subject "
        "`mnemo[.rpc].<path>.v1` with the same JSON body and reply. Authenticate with `Authorization: Bearer "
        '<API key>`; a key acts for one tenant. Errors: `{"error": {"code", "message"}}`.',
        lifespan=lifespan,
    )
    app.state.keys = KeyRing.load(settings.api_keys, settings.api_keys_file)
    app.state.limiter = ApiKeyRateLimiter(settings.rate_per_s, settings.burst)
    app.add_exception_handler(GatewayError, web.on_gateway_error)
    app.add_exception_handler(RequestValidationError, web.on_invalid_request)
    app.add_exception_handler(HTTPException, web.on_http_error)

    @app.get("/healthz", response_model=Health, responses={503: {"model": Health}}, tags=["health"])
    async def healthz(request: Request) -> Response:
        bridge: NatsBridge | None = getattr(request.app.state, "bridge", None)
        up = bridge is not None and bridge.nc.is_connected
        return JSONResponse({"status": "ok" if up else "unavailable"}, status_code=200 if up else 503)

    add_workbench(app, settings.workbench_dir)
    add_operator_views(app)
    for op in OPERATIONS:
        if op.kind == "event":
            app.post(
                op.path,
                status_code=202,
                response_model=Accepted,
                responses=web.error_responses(*EVENT_ERRORS),
                summary=op.summary,
                description=f"Publishes `{op.subject}` to JetStream. {op.request.__doc__ or ''}",
                tags=[op.tag],
                operation_id=op.subject.removesuffix(".v1").replace(".", "_"),
            )(_endpoint(op, _publish_event))
        else:
            app.post(
                op.path,
                response_model=op.reply,
                responses=web.error_responses(*RPC_ERRORS),
                summary=op.summary,
                description=f"Request-reply on `{op.subject}`. {op.request.__doc__ or ''}",
                tags=[op.tag],
                operation_id=op.subject.removesuffix(".v1").replace(".", "_"),
            )(_endpoint(op, _export if op.subject == subjects.LORE_EXPORT else _request))
    return app


Handler = Callable[[NatsBridge, GatewayRoute, str, bytes, str | None], Awaitable[Response]]


def _endpoint(op: GatewayRoute, handle: Handler) -> Callable[..., Awaitable[Response]]:
    """A route function whose body parameter is typed with the operation's model (FastAPI reads the
    signature, so it is built here rather than annotated with a variable)."""

    async def endpoint(request: Request, body: BaseModel, grant: KeyGrant, rid: str | None) -> Response:
        web.check_tenant(getattr(body, "tenant_id", ""), grant.tenant)
        web.check_engine(op.subject, grant)
        raw = body.model_dump_json(exclude_unset=True).encode()
        return await handle(request.app.state.bridge, op, grant.tenant, raw, rid)

    kw = inspect.Parameter.KEYWORD_ONLY
    endpoint.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("request", kw, annotation=Request),
            inspect.Parameter("body", kw, annotation=op.body_model),
            inspect.Parameter("grant", kw, annotation=Annotated[KeyGrant, Depends(web.key_grant)]),
            inspect.Parameter("rid", kw, annotation=Annotated[str | None, Depends(web.request_id)]),
        ],
        return_annotation=Response,
    )
    endpoint.__name__ = op.subject.replace(".", "_")
    return endpoint


async def _publish_event(bridge: NatsBridge, op: GatewayRoute, tenant: str, raw: bytes, rid: str | None) -> Response:
    published = await bridge.publish(op.subject, raw, msg_id(tenant, rid, op.subject, raw))
    accepted = Accepted(subject=op.subject, **vars(published))
    return JSONResponse(accepted.model_dump(), status_code=202, headers={"X-Request-Id": published.msg_id})


async def _request(bridge: NatsBridge, op: GatewayRoute, tenant: str, raw: bytes, rid: str | None) -> Response:
    message_id = msg_id(tenant, rid, op.subject, raw)
    reply = await bridge.request(op.subject, raw, message_id)
    return JSONResponse(reply, headers={"X-Request-Id": message_id})


async def _export(bridge: NatsBridge, op: GatewayRoute, tenant: str, raw: bytes, rid: str | None) -> Response:
    message_id = msg_id(tenant, rid, op.subject, raw)
    reply = await bridge.request(op.subject, raw, message_id)
    return StreamingResponse(
        export_chunks(reply),
        media_type="application/json",
        headers={
            "X-Request-Id": message_id,
            "Content-Disposition": f'attachment; filename="{reply.get("lorebook_id", "lorebook")}.json"',
        },
    )
