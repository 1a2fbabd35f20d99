"""The HTTP gateway served in-process on a test's NATS connection, for the gateway's integration tests."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx
from nats.aio.client import Client

from mnemo.services.gateway.app import create_app
from mnemo.services.gateway.settings import GatewaySettings
from mnemo.shared.streams import ensure_streams


@contextlib.asynccontextmanager
async def gateway_client(settings: GatewaySettings, nc: Client) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of a gateway with ``settings`` on ``nc`` (mnemo's streams made first, as a stack would)."""
    await ensure_streams(nc.jetstream())
    app = create_app(settings, [], nc=nc)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            yield client
