"""The three-node NATS JetStream cluster of ``mnemo cluster``: its ports, its readiness and its streams.

Node 1 listens where ``mnemo run``'s server does (``--nats-url``); nodes 2 and 3 on the ports given, else the
next two ports when free, else free ones. Routes and monitoring ports are free ports picked at each start
(the routes are rewritten into every node's configuration, so they need not be stable). The cluster is ready
when every node has routes to the two others and JetStream has a meta leader; then the streams are declared
with three replicas.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

import nats

from mnemo.runtime.nats_auth import ADMIN
from mnemo.runtime.servers import NatsNode, ServerStartError, free_port, port_free
from mnemo.shared.natsconn import connect_options
from mnemo.shared.settings import NatsSettings, Settings, StreamsSettings, read_section
from mnemo.shared.streams import ensure_streams

_NATS_ENV = "MNEMO_NATS__"
NODES = 3
#: Copies of each stream: one per node.
STREAM_REPLICAS = 3


def require_free(host: str, port: int, what: str) -> None:
    """Fail at once when ``port`` is taken: a server already there would pass for the one about to start."""
    if not port_free(host, port):
        raise ServerStartError(f"{what}: {host}:{port} is in use (mnemo run or another cluster?); choose another port")


def plan_nodes(nats_url: str, node_ports: list[int] | None = None) -> list[NatsNode]:
    """The three nodes: ``nats-1`` on ``nats_url``, ``nats-2`` and ``nats-3`` on ``node_ports`` (else the next
    ports when free, else free ports)."""
    parsed = urlparse(nats_url)
    host, first = parsed.hostname or "127.0.0.1", parsed.port or 4222
    planned = [first]  # every port of the plan differs from the others (free_port's ``avoid``)
    if node_ports is None:
        for p in (first + 1, first + 2):
            planned.append(p if p not in planned and port_free(host, p) else free_port(host, planned))
    else:
        planned += node_ports
    clients = planned[:]
    if len(clients) != NODES:
        raise ValueError(f"expected {NODES - 1} client ports for nats-2 and nats-3, got {node_ports}")

    def another() -> int:
        port = free_port(host, planned)
        planned.append(port)
        return port

    # The route port is picked before the monitoring port (arguments are evaluated left to right).
    return [NatsNode(f"nats-{i}", host, port, another(), another()) for i, port in enumerate(clients, start=1)]


def monitor(node: NatsNode, endpoint: str) -> dict[str, Any]:
    """A monitoring endpoint of ``node`` (``routez``, ``jsz``, ``varz``...) as JSON."""
    with urllib.request.urlopen(f"{node.monitor_url}/{endpoint}", timeout=2) as response:
        data: dict[str, Any] = json.loads(response.read())
    return data


def routed_peers(node: NatsNode) -> set[str]:
    """The names of the other servers ``node`` has routes to (a route pool holds several routes per peer)."""
    return {str(r.get("remote_name")) for r in monitor(node, "routez").get("routes") or [] if r.get("remote_name")}


def meta_leader(node: NatsNode) -> str | None:
    """The JetStream meta leader as ``node`` sees it, if it knows one."""
    leader = (monitor(node, "jsz").get("meta_cluster") or {}).get("leader")
    return str(leader) if leader else None


def wait_for_cluster(nodes: list[NatsNode], timeout: float = 120.0, check: Callable[[], None] | None = None) -> str:
    """Wait until every node routes to every other and agrees on a JetStream meta leader; return its name.
    ``check`` runs on each round, to fail early (a node that exited)."""
    names = {n.name for n in nodes}
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        if check is not None:
            check()
        with contextlib.suppress(OSError, ValueError):
            missing = {n.name: sorted(names - {n.name} - routed_peers(n)) for n in nodes}
            leaders = {meta_leader(n) for n in nodes}
            if not any(missing.values()) and len(leaders) == 1 and None not in leaders:
                return str(leaders.pop())
            last = f"missing routes {missing}, meta leaders {leaders}"
        time.sleep(0.2)
    raise ServerStartError(f"the NATS cluster did not form within {timeout:.0f}s: {last}")


async def _declare_streams(urls: list[str], deadline_s: float, env: dict[str, str] | None) -> None:
    # As the operators' user when secured (``env``: the services' MNEMO_NATS__* variables).
    nats_settings = NatsSettings.model_validate({k[len(_NATS_ENV) :].lower(): v for k, v in (env or {}).items()})
    options = connect_options(Settings(nats=nats_settings), ADMIN)
    nc = await nats.connect(urls, connect_timeout=5, max_reconnect_attempts=-1, **options)
    try:
        js = nc.jetstream(timeout=10)
        deadline = time.monotonic() + deadline_s
        while True:
            try:
                # The limits from MNEMO_STREAMS__* as the services read them, at three replicas.
                streams = read_section("streams", StreamsSettings).model_copy(update={"replicas": STREAM_REPLICAS})
                await ensure_streams(js, streams)
                return
            except Exception as exc:  # right after the meta leader is elected, placement may still fail
                if time.monotonic() > deadline:
                    raise ServerStartError(f"could not declare the streams with 3 replicas: {exc!r}") from exc
                await asyncio.sleep(0.5)
    finally:
        await nc.drain()


def declare_streams(nodes: list[NatsNode], env: dict[str, str] | None = None, timeout: float = 120.0) -> None:
    """Create every stream with :data:`STREAM_REPLICAS` copies; the services do the same at start.
    ``env``: the secured cluster's ``MNEMO_NATS__*`` (``mnemo.runtime.secure``)."""
    asyncio.run(_declare_streams([n.url for n in nodes], timeout, env))


def servers_for(nodes: list[NatsNode], k: int) -> str:
    """``MNEMO_NATS_URL`` of the ``k``-th process: every node, starting at a different one for each ``k``
    (nats-py then shuffles the list at connect, its default, and fails over to the others)."""
    urls = [n.url for n in nodes]
    shift = k % len(urls)
    return ",".join(urls[shift:] + urls[:shift])
