"""Where one context request spends its time (``make bench-context``, when p95 misses the goal or ``--profile``).

Two views, both on the running stack's own objects (same index, embedder, read models, lore loader):

- Wall time per part: a ``Gatherer`` built as ``services/context_assembler/app.py`` builds it, with its reads,
  index, embedder and lore loader wrapped in timing proxies, and ``activate_lore`` / ``reachable_history`` /
  ``assemble`` timed by wrapping the module attributes for the duration of the run. Requests run one at a
  time. Parts awaited together (``asyncio.gather`` in ``Gatherer.gather``) overlap, so parts do not add up to
  the total; each line says how long that part itself took.
- CPU: ``cProfile`` over requests sent through NATS (the services run in this process and thread), the
  functions with the most own time, each with its costliest caller. Read it with care: the profiler charges a
  fixed overhead per call, so code making millions of tiny calls looks far costlier than it is
  (``estimate_tokens``' per-character loop: ~50 ms per request under the profiler, a few ms without, which
  is why the wall-time view times it too).
"""

from __future__ import annotations

import contextlib
import cProfile
import functools
import inspect
import pstats
import statistics
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator, Sequence
from types import ModuleType
from typing import Any, cast

from nats.aio.client import Client as NatsClient

from services.context_assembler import assembly
from services.context_assembler import retrieval as gatherer_module
from services.context_assembler.lore import LoreLoader
from services.context_assembler.reads import ReadModelReads
from services.context_assembler.retrieval import AssemblerSettings, Gatherer
from shared import tokens
from shared.bootstrap import Core
from shared.events.contract import ContextAssembleRequest
from shared.readmodels.lore import LoreReadModel

Timings = defaultdict[str, list[float]]


class Timed:
    """Proxy recording the wall time of every method call of ``target`` under ``name.method``."""

    def __init__(self, target: Any, name: str, timings: Timings) -> None:
        self._target = target
        self._name = name
        self._timings = timings

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._target, attr)
        if not callable(value):
            return value
        key = f"{self._name}.{attr}"
        if inspect.iscoroutinefunction(value):

            @functools.wraps(value)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                start = time.perf_counter()
                try:
                    return await value(*args, **kwargs)
                finally:
                    self._timings[key].append((time.perf_counter() - start) * 1000)

            return timed_async

        @functools.wraps(value)
        def timed_sync(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return value(*args, **kwargs)
            finally:
                self._timings[key].append((time.perf_counter() - start) * 1000)

        return timed_sync


@contextlib.contextmanager
def timed_functions(timings: Timings, targets: Sequence[tuple[ModuleType, str]]) -> Iterator[None]:
    """Wrap module-level functions (as the caller's module sees them) with timers, restored on exit."""
    saved: list[tuple[ModuleType, str, Any]] = []
    try:
        for module, name in targets:
            original = getattr(module, name, None)
            if original is None:
                continue
            saved.append((module, name, original))

            def make(fn: Callable[..., Any], key: str) -> Callable[..., Any]:
                @functools.wraps(fn)
                def wrapper(*args: Any, **kwargs: Any) -> Any:
                    start = time.perf_counter()
                    try:
                        return fn(*args, **kwargs)
                    finally:
                        timings[key].append((time.perf_counter() - start) * 1000)

                return wrapper

            setattr(module, name, make(original, name))
        yield
    finally:
        for module, name, original in saved:
            setattr(module, name, original)


def summarize(timings: Timings, requests: int) -> list[tuple[str, float, float, float]]:
    """(part, calls per request, median ms, total ms per request), most costly per request first."""
    rows = [(key, len(v) / requests, statistics.median(v), sum(v) / requests) for key, v in timings.items() if v]
    return sorted(rows, key=lambda r: -r[3])


async def breakdown(core: Core, requests: Sequence[ContextAssembleRequest]) -> list[tuple[str, float, float, float]]:
    """Wall time per part of ``Gatherer.gather`` + ``assemble`` + reply serialisation, requests one at a time."""
    assert core.vectors is not None
    assert core.embedder is not None
    timings: Timings = defaultdict(list)
    gatherer = Gatherer(
        Timed(ReadModelReads.over(core.db, core.cipher), "reads", timings),
        Timed(core.vectors, "index", timings),
        Timed(core.embedder, "embedder", timings),
        AssemblerSettings(),
        cast(LoreLoader, Timed(LoreLoader(LoreReadModel(core.db, core.cipher)), "lore", timings)),
    )
    # ``estimate_tokens`` is looked up in its module by the token counter the assembler uses by default, so
    # this times every token count of the assembly (not the lore engine's, which holds its own reference).
    targets = [(gatherer_module, "activate_lore"), (gatherer_module, "reachable_history"), (tokens, "estimate_tokens")]
    await gatherer.gather(requests[0])  # warm the lore caches, as a running replica has them
    timings.clear()
    with timed_functions(timings, targets):
        for req in requests:
            start = time.perf_counter()
            inp = await gatherer.gather(req)
            gathered = time.perf_counter()
            reply = assembly.assemble(inp)
            assembled = time.perf_counter()
            reply.model_dump_json()
            done = time.perf_counter()
            timings["TOTAL gather"].append((gathered - start) * 1000)
            timings["TOTAL assemble"].append((assembled - gathered) * 1000)
            timings["TOTAL serialise reply"].append((done - assembled) * 1000)
    return summarize(timings, len(requests))


async def cpu_profile(
    send: Callable[[NatsClient, bytes], Awaitable[Any]], nc: NatsClient, bodies: Sequence[bytes], top: int = 20
) -> list[tuple[str, int, float, float]]:
    """(function, calls, own ms per request, cumulative ms per request) of the ``top`` by own time."""
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        for body in bodies:
            await send(nc, body)
    finally:
        profiler.disable()
    stats = pstats.Stats(profiler)
    rows = []
    for (file, line, fn), (_cc, calls, own, cum, callers) in stats.stats.items():  # type: ignore[attr-defined]
        # The caller that spent the most cumulative time in it: who to blame for a hot helper.
        caller = max(callers.items(), key=lambda kv: kv[1][3])[0] if callers else None
        by = f" <- {short(caller[0])}:{caller[1]}({caller[2]})" if caller else ""
        rows.append((f"{short(file)}:{line}({fn}){by}", calls, own * 1000 / len(bodies), cum * 1000 / len(bodies)))
    return sorted(rows, key=lambda r: -r[2])[:top]


def short(path: str) -> str:
    return path.split("site-packages/")[-1].split("/work/main/")[-1].split("lib/python3.11/")[-1]


def print_breakdown(rows: Sequence[tuple[str, float, float, float]]) -> None:
    print(f"\n{'part (wall time, one request at a time)':<44}{'calls/req':>10}{'median ms':>11}{'ms/req':>9}")
    for key, calls, median, per_request in rows:
        print(f"{key:<44}{calls:>10.1f}{median:>11.2f}{per_request:>9.2f}")


def print_cpu(rows: Sequence[tuple[str, int, float, float]]) -> None:
    print(f"\n{'cProfile: most own time per request (<- its costliest caller)':<120}{'calls':>9}{'own':>8}{'cum':>8}")
    for where, calls, own, cum in rows:
        print(f"{where[-120:]:<120}{calls:>9}{own:>8.2f}{cum:>8.2f}")


def as_json(rows: Sequence[tuple[str, float, float, float]]) -> dict[str, float]:
    return {key: round(per_request, 2) for key, _c, _m, per_request in rows}
