"""Running the gateway: uvicorn in the caller's event loop, so ``mnemo run`` can host it beside the services
and ``python -m mnemo.services.gateway`` / ``mnemo gateway`` run it alone; both stop on the host's own signals."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import uvicorn

from mnemo.services.gateway.app import create_app
from mnemo.services.gateway.metering import Metered
from mnemo.services.gateway.settings import SECTION, GatewaySettings
from mnemo.shared import natsconn, subjects
from mnemo.shared.bootstrap import configure_logging, mnemo_version, wait_for_stop_signal
from mnemo.shared.metrics import BUILD_INFO
from mnemo.shared.probes import HostedServer, Probes, probe_server
from mnemo.shared.readiness import watch_nats
from mnemo.shared.settings import Settings, read_section

log = logging.getLogger("mnemo.gateway")


def gateway_settings() -> GatewaySettings:
    return read_section(SECTION, GatewaySettings)


@contextlib.asynccontextmanager
async def hosted_gateway(
    settings: Settings, gateway: GatewaySettings, probes: Probes | None = None
) -> AsyncIterator[str]:
    """The gateway serving in this event loop; yields its URL (the real port when ``port`` is 0). ``probes``:
    the process's probe server's state, given the gateway's NATS connection to check once it is up."""
    # The gateway acts for the platforms: on a secured deployment it connects as the `platform` user (or
    # MNEMO_NATS__USER), with that user's password and the CA from MNEMO_NATS__*.
    app = create_app(gateway, settings.nats_servers, connect_options=natsconn.connect_options(settings, "platform"))
    config = uvicorn.Config(Metered(app), host=gateway.host, port=gateway.port, log_level="warning", access_log=False)
    server = HostedServer(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            await task  # raises what stopped it
            raise RuntimeError("the HTTP gateway stopped while starting")
        await asyncio.sleep(0.05)
    host, port = server.servers[0].sockets[0].getsockname()[:2]
    url = f"http://{host}:{port}"
    if probes is not None:  # the platform user may read the uploads bucket's stream: proof JetStream answers
        watch_nats(probes, app.state.bridge.nc, stream=f"OBJ_{subjects.UPLOADS_BUCKET}")
        probes.phase = "serving"
    if not len(app.state.keys):
        log.warning("the HTTP gateway has no API keys: every request gets 401 (MNEMO_GATEWAY__API_KEYS[_FILE])")
    try:
        yield url
    finally:
        server.stop()
        await task


async def serve_alone() -> None:
    settings = Settings(service_name="gateway")
    BUILD_INFO.labels(version=mnemo_version(), service="gateway").set(1)
    probes = Probes()
    async with probe_server(settings.observe, probes) as probes_url:
        log.info("gateway probes on %s (/healthz, /readyz, /metrics)", probes_url)
        async with hosted_gateway(settings, gateway_settings(), probes) as url:
            print(f"mnemo gateway listening on {url} (NATS {settings.nats_url})", flush=True)
            await wait_for_stop_signal()
            probes.phase = "stopping"


def main() -> None:
    configure_logging()
    asyncio.run(serve_alone())
