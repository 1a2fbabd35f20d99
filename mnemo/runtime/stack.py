"""The embedded stack: real servers as child processes, every mnemo service in this process.

nats-server (JetStream) and SecantusDB run as children with their data under ``data_dir``; Qdrant Edge
and the bundled embedding model run in-process. An in-process vector engine has exactly one owner, so the
services share this process, but each has its own broker and they talk only over NATS. (To run them apart
without a Qdrant server, ``MNEMO_VECTORS__MODE=stream``: ``docs/vector-stream.md``; the stack then runs one
writer and one follower's shard here.)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from faststream.nats import NatsBroker

from mnemo.runtime.catalog import SERVICES
from mnemo.runtime.demo import player
from mnemo.runtime.nats_auth import PLATFORM
from mnemo.runtime.render import render_reply
from mnemo.runtime.servers import ChildServer, host_port, start_mongo, start_nats, wait_for_port, websocket_config
from mnemo.shared.bootstrap import Core, deps_for, mnemo_version, open_core, wait_for_stop_signal, watch_core
from mnemo.shared.broker import make_broker, start_broker
from mnemo.shared.heap import start_heap_frozen
from mnemo.shared.metrics import BUILD_INFO
from mnemo.shared.natsconn import connect_options
from mnemo.shared.probes import Probes, probe_server
from mnemo.shared.readiness import watch_brokers
from mnemo.shared.settings import Settings
from mnemo.shared.tasks import stopped
from mnemo.shared.usage import USAGE

log = logging.getLogger("mnemo.stack")


def start_servers(settings: Settings, nats_config: str = "", *, monitor: bool = False) -> list[ChildServer]:
    """``nats_config``: more of nats-server's configuration (``--secure``: TLS and users). ``monitor``: nats-server
    serves its monitoring endpoints on ``MNEMO_NATS__MONITOR_PORT`` (the running stack; a one-off command
    such as ``mnemo replay --embedded`` does not take the port)."""
    data_dir = settings.data_dir
    host, port = host_port(settings.nats_url, 4222)
    if settings.nats.websocket_port:
        nats_config += websocket_config(host, settings.nats.websocket_port, nats_config)
    monitor_port = settings.nats.monitor_port if monitor else 0
    if monitor_port:
        nats_config += f'http: "{host}:{monitor_port}"\n'
    nats_server = start_nats(data_dir, host, port, extra_config=nats_config)
    try:
        if settings.nats.websocket_port:
            wait_for_port(nats_server, host, settings.nats.websocket_port, 20.0)
            scheme = "wss" if "tls {" in nats_config else "ws"
            log.info("NATS over WebSocket on %s://%s:%d", scheme, host, settings.nats.websocket_port)
        if monitor_port:
            wait_for_port(nats_server, host, monitor_port, 20.0)
            log.info("NATS monitoring on http://%s:%d (/jsz?consumers=true&config=true)", host, monitor_port)
        mhost, mport = host_port(settings.mongodb_url, 27017)
        mongo_server = start_mongo(data_dir, mhost, mport)
    except Exception:
        nats_server.stop()
        raise
    pids = {"mnemo": os.getpid(), "nats-server": nats_server.process.pid, "secantusd": mongo_server.process.pid}
    (data_dir / "run").mkdir(parents=True, exist_ok=True)
    (data_dir / "run" / "pids.json").write_text(json.dumps(pids))
    return [nats_server, mongo_server]


@contextlib.asynccontextmanager
async def all_services(settings: Settings, probes: Probes | None = None) -> AsyncIterator[Core]:
    """Every service of the catalog on one shared core, each with its own broker, plus the relay's recovery
    loop. On exit the brokers drain in-flight work (last started, first stopped), then the core closes.
    ``probes``: the process's probe server's state (one for every service of the process)."""
    probes = probes or Probes()
    core = await open_core(settings, vectors=True, embedder=True)
    watch_core(probes, core)
    brokers: list[NatsBroker] = []
    stopping: list[Callable[[], Awaitable[object]]] = []
    relay_task: asyncio.Task[None] | None = None
    usage_task: asyncio.Task[None] | None = None
    try:
        started: list[Callable[[], Awaitable[object]]] = []
        for spec in SERVICES:
            broker = make_broker(settings, spec.name)
            deps = deps_for(core, broker, spec.definition())
            deps.probes = probes
            broker.include_router(spec.router_factory()(deps))
            brokers.append(broker)
            started += deps.on_started
            stopping += deps.on_stopping
        for broker in brokers:
            await start_broker(broker)
        relay_task = asyncio.create_task(core.relay.run())
        usage_task = asyncio.create_task(USAGE.run(core.db))  # per-tenant usage counts (mnemo.shared.usage)
        for begin in started:
            await begin()
        watch_brokers(probes, brokers)
        probes.phase = "serving"
        with start_heap_frozen():
            yield core
    finally:
        probes.phase = "stopping"
        for stop in reversed(stopping):
            with contextlib.suppress(Exception):
                await stop()
        for broker in reversed(brokers):
            with contextlib.suppress(Exception):
                await broker.stop()
        for task in (relay_task, usage_task):  # the usage task flushes once more as it stops
            await stopped(task)
        await core.close()


async def run_stack(settings: Settings, *, demo: bool, nats_config: str = "", gateway: bool = True) -> None:
    """``gateway``: also serve the HTTP gateway (``mnemo/services/gateway``) and its workbench in this process, on
    ``MNEMO_GATEWAY__HOST``/``PORT`` with a local key for the demo tenant (``local_gateway.py``); it reaches the
    services over NATS like any other client."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    BUILD_INFO.labels(version=mnemo_version(), service="stack").set(1)
    probes = Probes()
    servers = await asyncio.to_thread(functools.partial(start_servers, settings, nats_config, monitor=True))
    try:
        async with probe_server(settings.observe, probes) as probes_url:
            print(
                f"probes (one for every service of this process): {probes_url}/healthz, /readyz, /metrics", flush=True
            )
            await asyncio.to_thread(_record_probes, settings.data_dir, probes_url)
            await _serve(settings, probes, demo=demo, gateway=gateway)
    finally:
        for server in reversed(servers):
            await asyncio.to_thread(server.stop)
        print("stopped.", flush=True)


def _record_probes(data_dir: Path, url: str) -> None:
    """The probe server's URL in ``run/probes.json`` (``mnemo status --data-dir`` reads it; ``pids.json`` holds
    pids only, as scripts expect)."""
    (data_dir / "run" / "probes.json").write_text(json.dumps({"mnemo": url}))


async def _serve(settings: Settings, probes: Probes, *, demo: bool, gateway: bool) -> None:
    async with all_services(settings, probes), contextlib.AsyncExitStack() as extras:
        try:
            if gateway:
                from mnemo.runtime.local_gateway import local_gateway

                local = await extras.enter_async_context(local_gateway(settings))
                print(f"mnemo gateway listening on {local.url}", flush=True)
                if local.built:
                    print(f"workbench: {local.workbench_url}", flush=True)
                else:  # a pip install: the API works; the app needs a build from the source checkout
                    print(
                        f"workbench: not built (make install in a source checkout builds it); API: {local.url}/v1/",
                        flush=True,
                    )
                print(f"workbench API key (tenant {local.tenant}): {local.key}", flush=True)
            print(f"mnemo is serving. Connect your platform to {settings.nats_url}", flush=True)
            if (passwords := settings.nats.password_dir) is not None:
                ca = settings.nats.tls_ca_file
                print(f"secured: user platform, password in {passwords / 'platform.password'}, CA {ca}", flush=True)
            print(f"data: {settings.data_dir.resolve()}   stop: Ctrl-C", flush=True)
            marker = settings.data_dir / "demo-played"
            if demo and not marker.exists():
                await play_demo(settings, marker)
            await wait_for_stop_signal()
        finally:
            print("stopping: draining in-flight work...", flush=True)


async def play_demo(settings: Settings, marker: Path) -> None:
    print("\nfirst start: playing the demo scene through the public contract...", flush=True)
    reply = await player.play(settings.nats_url, connect=connect_options(settings, PLATFORM))
    request = player.sample_request(player.load_scene())
    print(f"\nmnemo.rpc.context.assemble.v1  <-  {json.dumps(request)}\n", flush=True)
    print(render_reply(reply), flush=True)
    await asyncio.to_thread(marker.write_text, "played\n")
