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
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faststream.nats import NatsBroker
from nats.js import JetStreamContext

from bench.publisher import Published, PublisherProcess
from mnemo.runtime.catalog import spec
from mnemo.runtime.servers import free_port, start_mongo, start_nats
from mnemo.services.ingest.membership import assign
from mnemo.shared import subjects
from mnemo.shared.bootstrap import Core, running
from mnemo.shared.lease import LEASE_BUCKET
from mnemo.shared.partitions import ingest_drained, ingest_progress
from mnemo.shared.settings import Settings


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "machine": platform.machine(), "python": platform.python_version()}


@dataclass(frozen=True)
class Backends:
    settings: Settings
    pids: dict[str, int]  # server name -> process id (for CPU accounting)


@contextlib.asynccontextmanager
async def embedded_servers(keep: Path | None = None) -> AsyncIterator[Backends]:
    """Fresh nats-server and SecantusDB under a temporary directory (or ``keep``, which is left in place and
    reused by the next run given it); settings pointing at them."""
    with contextlib.ExitStack() as dirs:
        data_dir = (
            keep if keep is not None else Path(dirs.enter_context(tempfile.TemporaryDirectory(prefix="mnemo-bench-")))
        )
        data_dir.mkdir(parents=True, exist_ok=True)
        nats_server = await asyncio.to_thread(start_nats, data_dir, "127.0.0.1", free_port())
        mongo_server = await asyncio.to_thread(start_mongo, data_dir, "127.0.0.1", free_port())
        try:
            yield Backends(
                Settings(nats_url=nats_server.url, mongodb_url=mongo_server.url, data_dir=data_dir),
                {"nats-server": nats_server.process.pid, "secantusdb": mongo_server.process.pid},
            )
        finally:
            await asyncio.to_thread(mongo_server.stop)
            await asyncio.to_thread(nats_server.stop)


@contextlib.asynccontextmanager
async def embedded_backends(keep: Path | None = None) -> AsyncIterator[Settings]:
    async with embedded_servers(keep) as backends:
        yield backends.settings


def _cpu_seconds(pid: int, *, descendants: bool = True) -> float:
    """User + system CPU seconds of ``pid`` (and its descendants) so far (Linux /proc; 0 elsewhere)."""
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}  # pid -> (parent, cpu seconds)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            stats[int(stat.parent.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        total += stats.get(current, (0, 0.0))[1]
        if descendants:
            todo += [child for child, (parent, _) in stats.items() if parent == current]
    return total


_THIS = "this process"


class CpuMeter:
    """CPU seconds each process (this one and the servers) spent between ``start`` and ``stop``.

    Shows where a run's bound is: a process near 1.0 CPU-second per second is saturated, and the sum of
    CPU per item says how fast the work could go if every core were busy all the time."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = {_THIS: os.getpid(), **pids}
        self._start: dict[str, float] = {}
        self._began = 0.0
        self.used: dict[str, float] = {}
        self.elapsed = 0.0

    def start(self) -> None:
        self._began = time.perf_counter()
        self._start = self._now()

    def stop(self) -> None:
        self.elapsed = time.perf_counter() - self._began
        self.used = {name: used - self._start[name] for name, used in self._now().items()}

    def add(self, name: str, cpu_seconds: float) -> None:
        """CPU a process measured itself over the run (one that may have exited before ``stop``)."""
        self.used[name] = cpu_seconds

    def _now(self) -> dict[str, float]:
        # The servers are this process's children: count them apart, not in this process's total.
        return {name: _cpu_seconds(pid, descendants=name != _THIS) for name, pid in self.pids.items()}

    def report(self, items: int) -> dict[str, Any]:
        """Per process: CPU microseconds per item and its share of one core over the run."""
        return {
            name: {"cpu_us_per_item": round(used / items * 1e6), "busy": round(used / self.elapsed, 2)}
            for name, used in self.used.items()
        }


@contextlib.asynccontextmanager
async def running_service(settings: Settings, name: str) -> AsyncIterator[tuple[Core, NatsBroker]]:
    """One service on its own core and broker, with the relay's recovery loop, as in production."""
    async with running(spec(name).definition(), settings) as run:
        yield run.core, run.broker


async def wait_for_acks(js: JetStreamContext, stream: str, durable: str, n: int, timeout_s: float) -> None:
    """Until ``durable`` has acknowledged the first ``n`` messages of ``stream`` and holds nothing more.

    Each poll is a JetStream API request that the measured process parses (about a millisecond of its CPU),
    so polls are 0.25 s apart while the end is far, and 10 ms apart from half a second before the end
    that the progress so far predicts: the end is timed within ~10 ms for a few dozen polls in all."""
    start = time.perf_counter()
    progress_at, done = start, 0
    while True:
        info = await js.consumer_info(stream, durable)
        now = time.perf_counter()
        if info.ack_floor.stream_seq >= n and not info.num_pending and not info.num_ack_pending:
            return
        if now - start > timeout_s:
            raise TimeoutError(f"{durable} acknowledged {info.ack_floor.stream_seq} of {n} within {timeout_s}s")
        if info.ack_floor.stream_seq > done:
            progress_at, done = now, info.ack_floor.stream_seq
        predicted_end = start + (progress_at - start) * n / done if done else now + 1.0
        await asyncio.sleep(0.25 if now < predicted_end - 0.5 else 0.01)


async def wait_for_ingest(
    js: JetStreamContext, timeout_s: float, poll_s: float = 0.1, *, log_events: int | None = None
) -> None:
    """Until ingest has recorded everything the chat stream holds: its v1 router's durable and every partition
    durable hold nothing unacknowledged (``mnemo.shared.partitions.ingest_drained``: three JetStream API calls
    per look, every ``poll_s``).

    ``log_events``: the events ingest will have published to MNEMO_LOG by then; until the log holds that many,
    each look is one ``stream_info`` instead. Where ingest runs in this process (``make bench-ingest``) the full
    looks, parsing every durable's info in ingest's event loop, were 6.9 % of the process's CPU samples during the
    ingest phase (py-spy at 100 Hz, 10,000 messages, 2026-11-28 08:40 UTC), charged to ingest's rate and CPU.
    Ingest publishes an event before it acknowledges its message, so the log count comes first and the end is
    still timed by the acks."""
    start = time.perf_counter()
    while log_events is not None and (await js.stream_info(subjects.LOG_STREAM)).state.messages < log_events:
        if time.perf_counter() - start > timeout_s:
            break  # the full look below reports what is left
        await asyncio.sleep(poll_s)
    while not await ingest_drained(js):
        if time.perf_counter() - start > timeout_s:
            progress = await ingest_progress(js)
            raise TimeoutError(f"ingest still holds {sum(p.backlog for p in progress)} messages after {timeout_s}s")
        await asyncio.sleep(poll_s)


async def wait_for_partitions(
    js: JetStreamContext, count: int, replicas: int, timeout_s: float = 300, steady_s: float = 3.0
) -> None:
    """Until the ``count`` partitions and the v1 router are each leased and dealt as ``replicas`` ingest processes
    deal them once all are members (``dealt``: each holds its even share), and that has held for ``steady_s``
    (more than a partition tick, every fifth of the lease TTL): nothing is handed over while a benchmark measures.

    "Every replica holds some" was not enough: a replica that joined late (its start tried again while JetStream
    timed out) holds its first partitions while the others have not yet let go of the rest of its share, and
    another tick or two moved partitions during the measurement. A lease left by a replica that died is held by
    a pid no live replica has, so its share does not match until the lease expires."""
    deadline = time.perf_counter() + timeout_s
    want = dealt(count + 1, replicas)
    since: float | None = None
    while True:
        holders = await lease_holders(js, count)
        now = time.perf_counter()
        if len(holders) == count + 1 and shares(holders) == want:
            since = now if since is None else since
            if now - since >= steady_s:
                return
        else:
            since = None
        if now > deadline:
            raise TimeoutError(
                f"{len(holders)} of {count + 1} leases held, shares {shares(holders)} (want {want} per replica)"
            )
        await asyncio.sleep(0.5)


def dealt(items: int, replicas: int) -> list[int]:
    """How many of ``items`` each of ``replicas`` members holds once ingest has dealt them (``assign``), sorted;
    members left with none are not listed."""
    members = [f"m{i}" for i in range(replicas)]
    return sorted(n for m in members if (n := len(assign(members, range(items), m))))


def shares(holders: dict[str, int]) -> list[int]:
    """How many leases each holding process holds, sorted."""
    return sorted(Counter(holders.values()).values())


async def lease_holders(js: JetStreamContext, count: int) -> dict[str, int]:
    """Lease key -> the pid holding it, for the v1 router and the ``count`` partitions (those held now)."""
    kv = await js.key_value(LEASE_BUCKET)
    out: dict[str, int] = {}
    for key in [subjects.INGEST_V1_LEASE, *(subjects.partition_lease(count, k) for k in range(count))]:
        with contextlib.suppress(Exception):
            entry = await kv.get(key)
            out[key] = int((entry.value or b"").decode().rsplit(":", 1)[1])
    return out


def percentile(values: list[float], p: float) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1]


def print_result(result: dict[str, Any]) -> None:
    """The last line of every benchmark: one JSON object."""
    print(json.dumps(result), flush=True)


async def publish_until_ingested(
    publisher: PublisherProcess, js: JetStreamContext, cpu: CpuMeter, *, log_events: int | None = None
) -> tuple[Published, float]:
    """Publish the publisher's bodies and wait until ingest has recorded them all; ``cpu`` measures just that
    span. Returns the publisher's own figures and the seconds from its first publish to ingest's last record.
    ``log_events``: see ``wait_for_ingest``."""
    cpu.start()
    start = time.perf_counter()
    published = await publisher.publish()
    await wait_for_ingest(js, timeout_s=600, log_events=log_events)
    elapsed = time.perf_counter() - start
    cpu.stop()
    return published, elapsed
