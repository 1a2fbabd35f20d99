"""A process's probe server: ``/healthz`` (alive), ``/readyz`` (its dependencies answer) and ``/metrics``.

:class:`Probes` holds what the endpoints read, filled in by the host as the process starts
(``mnemo.shared.bootstrap.running``, the one-process stack, the gateway): the startup phase, named readiness
checks and the collectors run before each scrape. ``/readyz`` runs every check at once, each within
:data:`CHECK_TIMEOUT_S`, and answers 200 when all pass, else 503, with each check's outcome in the body:
``{"status": "ready", "checks": {"mongodb": "ok", ...}}``. ``/healthz`` answers 200 while the event loop
serves requests. ``/metrics`` is :data:`mnemo.shared.metrics.REGISTRY` in Prometheus's text format.

:func:`probe_server` runs uvicorn in the caller's event loop, without its own signal handlers (the host owns
SIGINT and SIGTERM), on ``MNEMO_OBSERVE__HTTP_HOST``/``HTTP_PORT``; a port already taken fails the start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemo.shared.metrics import REGISTRY
from mnemo.shared.settings import ObserveSettings

log = logging.getLogger(__name__)

#: A readiness check: returns a short detail when it passes, raises (the message says why) when it does not.
Check = Callable[[], Awaitable[str]]
#: Brings gauges up to date before a scrape (e.g. the durables' pending counts, read from JetStream).
Collector = Callable[[], Awaitable[None]]
#: Each check and the collectors together get this long: a hung dependency makes the probe fail, not hang.
CHECK_TIMEOUT_S = 2.0


class NotReady(Exception):
    """A readiness check's failure, with what is missing."""


class Probes:
    def __init__(self) -> None:
        self.phase = "starting"  # what the process is doing before it serves: starting, standby, serving, stopping
        self._checks: dict[str, Check] = {}
        self._collectors: list[Collector] = []

    def add_check(self, name: str, check: Check) -> None:
        self._checks[name] = check

    def add_collector(self, collect: Collector) -> None:
        self._collectors.append(collect)

    async def readiness(self) -> tuple[bool, dict[str, str]]:
        """(ready, each check's outcome): the phase first, then every check run at once."""
        outcomes = {"phase": self.phase}
        names = list(self._checks)
        results = await asyncio.gather(*(_run(self._checks[n]) for n in names))
        outcomes.update(zip(names, results, strict=True))
        ready = self.phase in ("serving", "standby") and all(r.startswith("ok") for r in results)
        return ready, outcomes

    async def collect(self) -> None:
        results = await asyncio.gather(
            *(asyncio.wait_for(c(), CHECK_TIMEOUT_S) for c in self._collectors), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException):
                log.debug("a metrics collector failed: %r", result)


async def _run(check: Check) -> str:
    try:
        detail = await asyncio.wait_for(check(), CHECK_TIMEOUT_S)
    except TimeoutError:
        return f"failed: no answer within {CHECK_TIMEOUT_S:.0f} s"
    except Exception as exc:
        return f"failed: {exc or type(exc).__name__}"
    return f"ok: {detail}" if detail else "ok"


def probe_app(probes: Probes) -> Starlette:
    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "alive", "phase": probes.phase})

    async def readyz(request: Request) -> Response:
        ready, checks = await probes.readiness()
        return JSONResponse({"status": "ready" if ready else "not ready", "checks": checks}, 200 if ready else 503)

    async def metrics(request: Request) -> Response:
        await probes.collect()
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

    return Starlette(routes=[Route("/healthz", healthz), Route("/readyz", readyz), Route("/metrics", metrics)])


class HostedServer(uvicorn.Server):
    """uvicorn without its own signal handlers: the host owns SIGINT/SIGTERM (the probe server, the gateway);
    :meth:`stop` ends it."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._exit = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def stop(self) -> None:
        """Begin the shutdown now (``serve`` then returns once open connections are done)."""
        self.should_exit = True
        self._exit.set()

    async def main_loop(self) -> None:
        # uvicorn's own loop wakes every 0.1 s to look at ``should_exit``: in every mnemo process, ten of an idle
        # ingest replica's ~24 wakeups a second (/proc, 4 replicas, 2026-11-27). Here it ticks once a second (the
        # Date header's resolution; ``on_tick`` counts tenths) and ``stop`` wakes it at once.
        tenths = 0
        while not await self.on_tick(tenths):
            tenths = (tenths + 10) % 864_000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exit.wait(), 1.0)


@contextlib.asynccontextmanager
async def probe_server(settings: ObserveSettings, probes: Probes) -> AsyncIterator[str]:
    """The probe server serving in this event loop; yields its URL (the real port when ``http_port`` is 0)."""
    # Bound here, so a port already taken raises OSError to the host (uvicorn would exit the process).
    family = socket.AF_INET6 if ":" in settings.http_host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((settings.http_host, settings.http_port))
    except OSError as exc:
        sock.close()
        raise OSError(f"the probe server cannot listen on {settings.http_host}:{settings.http_port}: {exc}") from exc
    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(probe_app(probes), log_level="warning", access_log=False, lifespan="off")
    server = HostedServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            sock.close()
            await task  # raises what stopped it
            raise OSError(f"the probe server on {host}:{port} stopped while starting")
        await asyncio.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()
        await task
        sock.close()
