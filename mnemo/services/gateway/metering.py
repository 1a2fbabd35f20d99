"""The gateway's request metrics (``mnemo_gateway_requests_total``, ``mnemo_gateway_request_duration_seconds``):
an ASGI wrapper around the app, so the routes themselves stay as they are.

The ``route`` label is the path of a ``/v1`` operation (a fixed set, ``operations.OPERATIONS``); any other path
counts as ``other``, so a client probing random paths cannot grow the label set. Health and documentation
routes are not counted.
"""

from __future__ import annotations

import time
from typing import Any

from mnemo.services.gateway.operations import OPERATIONS
from mnemo.shared.metrics import GATEWAY_REQUESTS, GATEWAY_SECONDS

_ROUTES = frozenset(op.path for op in OPERATIONS)
Scope = dict[str, Any]
Receive = Any
Send = Any


class Metered:
    def __init__(self, app: Any) -> None:
        self.app = app
        self._seconds = {route: GATEWAY_SECONDS.labels(route=route) for route in (*_ROUTES, "other")}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        route = path if path in _ROUTES else "other"
        status = 500  # what a request that fails before responding counts as
        started = time.perf_counter()

        async def sending(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self._seconds[route].observe(time.perf_counter() - started)
            GATEWAY_REQUESTS.labels(route=route, status=str(status)).inc()
