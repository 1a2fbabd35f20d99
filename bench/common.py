"""Shared helpers for benchmarks: embedded servers in a temporary directory, a service on a core, timing."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from faststream.nats import NatsBroker

from services.catalog import spec
from shared.bootstrap import Core, deps_for, open_core
from shared.broker import make_broker, start_broker
from shared.embedded.servers import free_port, start_mongo, start_nats
from shared.settings import Settings


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "machine": platform.machine(), "python": platform.python_version()}


@contextlib.asynccontextmanager
async def embedded_backends() -> AsyncIterator[Settings]:
    """Fresh nats-server and SecantusDB under a temporary directory; settings pointing at them."""
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-") as tmp:
        data_dir = Path(tmp)
        nats_server = await asyncio.to_thread(start_nats, data_dir, "127.0.0.1", free_port())
        mongo_server = await asyncio.to_thread(start_mongo, data_dir, "127.0.0.1", free_port())
        try:
            yield Settings(nats_url=nats_server.url, mongodb_url=mongo_server.url, data_dir=data_dir)
        finally:
            await asyncio.to_thread(mongo_server.stop)
            await asyncio.to_thread(nats_server.stop)


@contextlib.asynccontextmanager
async def running_service(settings: Settings, name: str) -> AsyncIterator[tuple[Core, NatsBroker]]:
    """One service on its own core and broker, with the relay's recovery loop, as in production."""
    service = spec(name)
    core = await open_core(settings, vectors=service.vectors, embedder=service.embedder)
    broker = make_broker(settings, name)
    broker.include_router(service.router_factory()(deps_for(core, broker)))
    relay_task = asyncio.create_task(core.relay.run())
    await start_broker(broker)
    try:
        yield core, broker
    finally:
        await broker.stop()
        relay_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await relay_task
        await core.close()


async def wait_until(check: Callable[[], Awaitable[bool]], timeout_s: float, poll_s: float = 0.02) -> float:
    """Seconds until ``check()`` is true (polled); raises TimeoutError past ``timeout_s``."""
    start = time.perf_counter()
    while not await check():
        if time.perf_counter() - start > timeout_s:
            raise TimeoutError(f"condition not met within {timeout_s}s")
        await asyncio.sleep(poll_s)
    return time.perf_counter() - start


def percentile(values: list[float], p: float) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1]


def print_result(result: dict[str, Any]) -> None:
    """The last line of every benchmark: one JSON object."""
    print(json.dumps(result), flush=True)
