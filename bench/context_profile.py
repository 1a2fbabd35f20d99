"""Where one context request spends its time (``make bench-context``, when p95 misses the goal or ``--profile``).

Two views, both on the running stack's own objects (same index, embedder, read models, lore loader):

- Wall time per part: a ``Gatherer`` built with the very arguments ``mnemo/services/context_assembler/app.py`` gave
  the live one (captured when the stack starts), its reads, index, embedder and lore loader wrapped in timing
  proxies, and ``activate_lore`` / ``reachable_history`` /
  ``assemble`` timed by wrapping the module attributes for the duration of the run. Requests run one at a
  time. Parts awaited together (``asyncio.gather`` in ``Gatherer.gather``) overlap, so parts do not add up to
  the total; each line says how long that part took inside the request, and ("alone") how long the same call
  with the same arguments takes when nothing else runs: the difference is queueing on the one event loop and
  on SecantusDB, a single-threaded server.
- When each part starts and ends, in ms since its request started (p50 and p95 over the requests timed): the
  critical path of a request. A part that ends late at p95 while starting on time is slow itself; one that
  starts late waits for what comes before it (the query embedding, for the vector search).
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
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from nats.aio.client import Client as NatsClient

from bench.common import percentile
from mnemo.services.context_assembler import app as app_module
from mnemo.services.context_assembler.assemble import assembly
from mnemo.services.context_assembler.gather import gathering as gatherer_module
from mnemo.services.context_assembler.gather.gathering import Gatherer
from mnemo.shared import tokens
from mnemo_client.wire.contract import ContextAssembleRequest

Timings = defaultdict[str, list[float]]


@dataclass(frozen=True)
class Call:
    """One awaited call as it was made during a request, to be made again alone."""

    key: str
    fn: Callable[..., Awaitable[Any]]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


class Milestones:
    """When each part first started and last ended in each request, in ms since the request started."""

    def __init__(self) -> None:
        self.origin = 0.0
        self._current: dict[str, list[float]] = {}  # part -> [first start, last end] in this request
        self.requests: list[dict[str, list[float]]] = []

    def begin(self) -> None:
        self.origin = time.perf_counter()
        self._current = {}

    def note(self, part: str, start: float, end: float) -> None:
        """A call of ``part`` from ``start`` to ``end`` (``time.perf_counter`` values)."""
        since = [(start - self.origin) * 1000, (end - self.origin) * 1000]
        if part in self._current:
            self._current[part][1] = since[1]
        else:
            self._current[part] = since

    def end(self) -> None:
        self.requests.append(self._current)


TimelineRow = tuple[str, float, float, float, float]


def timeline(milestones: Milestones) -> list[TimelineRow]:
    """(part, start p50, start p95, end p50, end p95) in ms since the request started, by end p50."""
    parts = {part for request in milestones.requests for part in request}
    rows: list[TimelineRow] = []
    for part in parts:
        starts = [r[part][0] for r in milestones.requests if part in r]
        ends = [r[part][1] for r in milestones.requests if part in r]
        rows.append((part, percentile(starts, 50), percentile(starts, 95), percentile(ends, 50), percentile(ends, 95)))
    return sorted(rows, key=lambda r: r[3])


class Timed:
    """Proxy recording the wall time of every method call of ``target`` under ``name.method`` (and, in
    ``calls``, every awaited call with its arguments; in ``milestones``, when it ran in its request)."""

    def __init__(
        self,
        target: Any,
        name: str,
        timings: Timings,
        calls: list[Call] | None = None,
        milestones: Milestones | None = None,
    ) -> None:
        self._target = target
        self._name = name
        self._timings = timings
        self._calls = calls
        self._milestones = milestones

    def _record(self, key: str, start: float) -> None:
        end = time.perf_counter()
        self._timings[key].append((end - start) * 1000)
        if self._milestones is not None:
            self._milestones.note(key, start, end)

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._target, attr)
        if not callable(value):
            return value
        key = f"{self._name}.{attr}"
        if inspect.iscoroutinefunction(value):

            @functools.wraps(value)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                if self._calls is not None:
                    self._calls.append(Call(key, value, args, kwargs))
                start = time.perf_counter()
                try:
                    return await value(*args, **kwargs)
                finally:
                    self._record(key, start)

            return timed_async

        @functools.wraps(value)
        def timed_sync(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return value(*args, **kwargs)
            finally:
                self._record(key, start)

        return timed_sync


@dataclass(frozen=True)
class GathererArgs:
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


@contextlib.contextmanager
def capture_gatherer() -> Iterator[list[GathererArgs]]:
    """While open, every ``Gatherer`` that ``mnemo/services/context_assembler/app.py`` builds is recorded with its
    arguments, so the breakdown builds the same one (same reads, index, embedder, lore loader and caches,
    token counter, ...) whatever the app passes, with timing proxies around the first parts."""
    captured: list[GathererArgs] = []
    namespace = vars(app_module)  # the name the app's module looks up when it builds the router
    original = namespace["Gatherer"]

    def factory(*args: Any, **kwargs: Any) -> Gatherer:
        captured.append(GathererArgs(args, kwargs))
        built: Gatherer = original(*args, **kwargs)
        return built

    namespace["Gatherer"] = factory
    try:
        yield captured
    finally:
        namespace["Gatherer"] = original


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


Row = tuple[str, float, float, float, float | None]


def summarize(timings: Timings, alone: Timings, requests: int) -> list[Row]:
    """(part, calls per request, median ms, total ms per request, median ms when run alone), most costly per
    request first."""
    rows: list[Row] = [
        (
            key,
            len(v) / requests,
            statistics.median(v),
            sum(v) / requests,
            statistics.median(alone[key]) if alone.get(key) else None,
        )
        for key, v in timings.items()
        if v
    ]
    return sorted(rows, key=lambda r: -r[3])


PARTS = ("reads", "index", "embedder", "settings", "lore")  # Gatherer's first parameters, in order


async def breakdown(
    built: GathererArgs, requests: Sequence[ContextAssembleRequest]
) -> tuple[list[Row], list[TimelineRow]]:
    """Wall time per part of ``Gatherer.gather`` + ``assemble`` + reply serialisation, requests one at a time;
    then every awaited part again, alone, with the same arguments (its own cost, without the parts it
    overlapped with competing for the event loop and the single-threaded SecantusDB). Beside it, when each
    part started and ended in its request (:func:`timeline`)."""
    timings: Timings = defaultdict(list)
    calls: list[Call] = []
    milestones = Milestones()
    args, kwargs = list(built.args), dict(built.kwargs)
    for pos, name in enumerate(PARTS):
        if name == "settings":
            continue
        if pos < len(args) and args[pos] is not None:
            args[pos] = Timed(args[pos], name, timings, calls, milestones)
        elif kwargs.get(name) is not None:
            kwargs[name] = Timed(kwargs[name], name, timings, calls, milestones)
    gatherer = Gatherer(*args, **kwargs)
    # ``estimate_tokens`` is looked up in its module by the token counter the assembler uses by default, so
    # this times every token count of the assembly (not the lore engine's, which holds its own reference).
    targets = [(gatherer_module, "reachable_history"), (tokens, "estimate_tokens")]
    await gatherer.gather(requests[0])  # warm the lore caches, as a running replica has them
    timings.clear()
    calls.clear()
    milestones.requests.clear()
    with timed_functions(timings, targets):
        for req in requests:
            milestones.begin()
            start = time.perf_counter()
            inp = await gatherer.gather(req)
            gathered = time.perf_counter()
            reply = assembly.assemble(inp)
            assembled = time.perf_counter()
            reply.model_dump_json()
            done = time.perf_counter()
            for key, begun, ended in (
                ("TOTAL gather", start, gathered),
                ("TOTAL assemble", gathered, assembled),
                ("TOTAL serialise reply", assembled, done),
            ):
                timings[key].append((ended - begun) * 1000)
                milestones.note(key, begun, ended)
            milestones.end()
    alone: Timings = defaultdict(list)
    for call in calls:
        start = time.perf_counter()
        await call.fn(*call.args, **call.kwargs)
        alone[call.key].append((time.perf_counter() - start) * 1000)
    return summarize(timings, alone, len(requests)), timeline(milestones)


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


def print_breakdown(rows: Sequence[Row]) -> None:
    print(
        f"\n{'part (wall time, one request at a time)':<44}{'calls/req':>10}{'median ms':>11}{'ms/req':>9}{'alone':>8}"
    )
    for key, calls, median, per_request, alone in rows:
        alone_text = f"{alone:8.2f}" if alone is not None else " " * 8
        print(f"{key:<44}{calls:>10.1f}{median:>11.2f}{per_request:>9.2f}{alone_text}")


def print_timeline(rows: Sequence[TimelineRow]) -> None:
    print(
        f"\n{'when each part runs (ms since its request started)':<44}{'start p50':>10}{'p95':>7}{'end p50':>9}{'p95':>7}"
    )
    for part, start50, start95, end50, end95 in rows:
        print(f"{part:<44}{start50:>10.2f}{start95:>7.2f}{end50:>9.2f}{end95:>7.2f}")


def timeline_json(rows: Sequence[TimelineRow]) -> dict[str, list[float]]:
    """part -> [start p50, start p95, end p50, end p95] in ms since the request started."""
    return {part: [round(v, 2) for v in values] for part, *values in rows}


def print_cpu(rows: Sequence[tuple[str, int, float, float]]) -> None:
    print(f"\n{'cProfile: most own time per request (<- its costliest caller)':<120}{'calls':>9}{'own':>8}{'cum':>8}")
    for where, calls, own, cum in rows:
        print(f"{where[-120:]:<120}{calls:>9}{own:>8.2f}{cum:>8.2f}")


def lore_share(rows: Sequence[Row]) -> float | None:
    """``lore.activate``'s share of a request's time (gather + assemble + serialisation), per request."""
    per_request = {key: ms for key, _c, _m, ms, _a in rows}
    total = sum(per_request.get(k, 0.0) for k in ("TOTAL gather", "TOTAL assemble", "TOTAL serialise reply"))
    if "lore.activate" not in per_request or total <= 0:
        return None
    return round(per_request["lore.activate"] / total, 3)


def as_json(rows: Sequence[Row]) -> dict[str, list[float | None]]:
    """part -> [ms per request in the request, median ms alone]."""
    return {
        key: [round(per_request, 2), round(alone, 2) if alone is not None else None]
        for key, _c, _m, per_request, alone in rows
    }
