"""Running the gateway: uvicorn in the caller's event loop, so ``mnemo run`` can host it beside the services
and ``python -m mnemo.services.gateway`` / ``mnemo gateway`` run it alone; both stop on the host's own signals."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator

import uvicorn

from mnemo.services.gateway.app import create_app
from mnemo.services.gateway.settings import SECTION, GatewaySettings
from mnemo.shared import natsconn
from mnemo.shared.bootstrap import configure_logging, wait_for_stop_signal
from mnemo.shared.settings import Settings, read_section

log = logging.getLogger("mnemo.gateway")


class _HostedServer(uvicorn.Server):
    """uvicorn without its own signal handlers: the host (``wait_for_stop_signal``) owns SIGINT/SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def gateway_settings() -> GatewaySettings:
    return read_section(SECTION, GatewaySettings)


@contextlib.asynccontextmanager
async def hosted_gateway(settings: Settings, gateway: GatewaySettings) -> AsyncIterator[str]:
    """The gateway serving in this event loop; yields its URL (the real port when ``port`` is 0)."""
    # The gateway acts for the platforms: on a secured deployment it connects as the `platform` user (or
    # MNEMO_NATS__USER), with that user's password and the CA from MNEMO_NATS__*.
    app = create_app(gateway, settings.nats_servers, connect_options=natsconn.connect_options(settings, "platform"))
    config = uvicorn.Config(app, host=gateway.host, port=gateway.port, log_level="warning", access_log=False)
    server = _HostedServer(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            await task  # raises what stopped it
            raise RuntimeError("the HTTP gateway stopped while starting")
        await asyncio.sleep(0.05)
    host, port = server.servers[0].sockets[0].getsockname()[:2]
    url = f"http://{host}:{port}"
    if not len(app.state.keys):
        log.warning("the HTTP gateway has no API keys: every request gets 401 (MNEMO_GATEWAY__API_KEYS[_FILE])")
    try:
        yield url
    finally:
        server.should_exit = True
        await task


async def serve_alone() -> None:
    settings = Settings(service_name="gateway")
    async with hosted_gateway(settings, gateway_settings()) as url:
        print(f"mnemo gateway listening on {url} (NATS {settings.nats_url})", flush=True)
        await wait_for_stop_signal()


def main() -> None:
    configure_logging()
    asyncio.run(serve_alone())
