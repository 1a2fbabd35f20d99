"""The workbench in the gateway: its built files under ``/workbench/`` and ``GET /v1/whoami``.

The workbench (``workbench/``, built by ``make install`` into ``workbench/dist``) is a static single-page app: the
browser holds an API key and calls the same ``POST /v1/...`` routes a platform calls, so it sees exactly what
that key's tenant may see and nothing more. The gateway only hands out its files (with a Content-Security-Policy
that allows nothing but this origin) and tells a key which tenant it acts for, so the app can fill
``tenant_id`` in every body. Without a build the page says how to make one instead of failing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import Depends, FastAPI
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mnemo.services.gateway import web

PATH = "/workbench"
#: Where ``make install`` builds the app in a source checkout (the repository's ``workbench/dist``).
DEFAULT_DIR = Path(__file__).resolve().parents[3] / "workbench" / "dist"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
NOT_BUILT = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>mnemo workbench</title></head>
<body><main><h1>The workbench is not built</h1><p>Run <code>make install</code> in the mnemo checkout (it builds
<code>workbench/dist</code>), or point <code>MNEMO_GATEWAY__WORKBENCH_DIR</code> at a build.</p></main></body></html>"""


class WhoAmI(BaseModel):
    tenant_id: str = Field(..., description="the tenant this API key acts for: every body must name it")


class _Headers:
    """Adds the workbench's security headers to each of its responses."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [
                    (b"content-security-policy", CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


def is_built(directory: Path | None) -> bool:
    """Whether ``directory`` (``DEFAULT_DIR`` when None) holds a built workbench: a ``pip install`` has none,
    and mnemo then serves its API alone and says so."""
    return ((directory or DEFAULT_DIR) / "index.html").is_file()


def add_workbench(app: FastAPI, directory: Path | None) -> None:
    """Serve the built app from ``directory`` (``DEFAULT_DIR`` when None) and the key's tenant at /v1/whoami."""
    built = directory or DEFAULT_DIR

    @app.get("/v1/whoami", response_model=WhoAmI, responses=web.error_responses(401, 429), tags=["workbench"])
    async def whoami(tenant: Annotated[str, Depends(web.key_tenant)]) -> WhoAmI:
        """The tenant the request's API key acts for (the workbench fills it in every body)."""
        return WhoAmI(tenant_id=tenant)

    @app.get("/", include_in_schema=False)
    async def root() -> Response:
        return RedirectResponse(f"{PATH}/")

    if is_built(built):
        app.mount(PATH, _Headers(StaticFiles(directory=built, html=True)), name="workbench")
    else:

        @app.get(f"{PATH}/{{rest:path}}", include_in_schema=False)
        async def not_built(rest: str) -> Response:
            return HTMLResponse(NOT_BUILT, status_code=503)
