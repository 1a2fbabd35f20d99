"""The HTTP gateway and the workbench as ``mnemo run`` serves them: a local API key for the demo tenant and a
port that is free.

``mnemo run`` is the embedded stack a developer starts on their machine, so it brings up everything a person
needs to look at it: the gateway (``MNEMO_GATEWAY__HOST``/``PORT``) with the workbench at ``/workbench/``, and
one API key acting for the demo tenant (with the operator right: the person running the stack operates it), made once and kept in ``<data dir>/workbench/api-key`` (readable by
its owner only) so a bookmark keeps working across restarts. The key is added beside the configured keys
(``MNEMO_GATEWAY__API_KEYS[_FILE]``), never instead of them. When the configured port is taken (another stack,
another program), the gateway takes a free one and says so rather than failing the whole stack.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from mnemo.services.gateway.auth import OPERATOR, new_key
from mnemo.services.gateway.serve import gateway_settings, hosted_gateway
from mnemo.services.gateway.settings import GatewaySettings
from mnemo.services.gateway.workbench import PATH, is_built
from mnemo.shared.settings import Settings

log = logging.getLogger("mnemo.stack")
DEMO_TENANT = "demo"


@dataclass(frozen=True)
class LocalGateway:
    url: str
    workbench_url: str
    key: str
    tenant: str
    built: bool  # False for a pip install: the API is served, the workbench page says how to build it


def local_key(data_dir: Path) -> str:
    """The demo tenant's local key: read from the data directory, or made and written there (mode 0600)."""
    path = data_dir / "workbench" / "api-key"
    if path.is_file() and (existing := path.read_text().strip()):
        return existing
    path.parent.mkdir(parents=True, exist_ok=True)
    key, _line = new_key(DEMO_TENANT)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(key + "\n")
    return key


def port_taken(host: str, port: int) -> bool:
    if port == 0:
        return False
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def with_local_key(gateway: GatewaySettings, key: str) -> GatewaySettings:
    """The settings with the local key added (a free port instead of a taken one)."""
    update: dict[str, object] = {"api_keys": {**gateway.api_keys, key: f"{DEMO_TENANT} {OPERATOR}"}}
    if port_taken(gateway.host, gateway.port):
        log.warning("port %d is taken: the HTTP gateway listens on a free port instead", gateway.port)
        update["port"] = 0
    return gateway.model_copy(update=update)


@contextlib.asynccontextmanager
async def local_gateway(settings: Settings) -> AsyncIterator[LocalGateway]:
    key = local_key(settings.data_dir)
    gateway = with_local_key(gateway_settings(), key)
    async with hosted_gateway(settings, gateway) as url:
        built = is_built(gateway.workbench_dir)
        yield LocalGateway(url=url, workbench_url=f"{url}{PATH}/", key=key, tenant=DEMO_TENANT, built=built)
