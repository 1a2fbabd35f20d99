"""``mnemo status``: one report of a running deployment, from its probes and its JetStream state.

- Processes: each one's readiness from its probe server's ``/readyz``. The probe URLs come from ``--probe``
  (``[NAME=]URL``, repeatable: any deployment, e.g. ports forwarded from pods) or from ``--data-dir``
  (``make cluster``: every service's ``http`` in ``run/pids.json``; ``make run``: ``run/probes.json``).
- Durables: every durable consumer of mnemo's streams with its lag (``num_pending + num_ack_pending``, what
  KEDA's ``nats-jetstream`` scaler reads), redeliveries, filter and partition (an ingest partition's durable
  is ``mnemo_ingest_p<N>_of_<count>``).
- Dead letters per service (``MNEMO_DLQ``) and each stream's size.

NATS is reached at ``--nats-url``, else ``MNEMO_NATS_URL``, else the cluster's nodes from ``pids.json``, as
``MNEMO_NATS__USER`` (a secured deployment: the operators' ``admin``). What cannot be reached is reported,
not fatal: the report says what it could not read.
"""

from __future__ import annotations

import asyncio
import json
import re
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.js.errors import NotFoundError

from mnemo.runtime.contract_client import ContractError, connected
from mnemo.runtime.servers import pid_alive
from mnemo.shared import subjects
from mnemo.shared.settings import Settings

PROBE_TIMEOUT_S = 5.0
_PARTITION = re.compile(r"_p(\d+)_of_(\d+)$")
#: mnemo's streams: its own, the lease bucket's and the uploads bucket's (other applications' are left out).
_OURS = re.compile(r"^(MNEMO_|KV_mnemo|OBJ_MNEMO)")


@dataclass
class ProcessStatus:
    name: str
    replica: int | None = None
    pid: int | None = None
    alive: bool | None = None
    http: str | None = None
    ready: bool | None = None  # None: no probe to ask
    detail: str = ""


@dataclass
class DurableStatus:
    stream: str
    durable: str
    filter: str
    partition: str | None
    pending: int
    ack_pending: int
    redelivered: int
    waiting: int

    @property
    def lag(self) -> int:
        return self.pending + self.ack_pending


@dataclass
class StreamStatus:
    name: str
    messages: int
    bytes: int
    consumers: int
    replicas: int


@dataclass
class Report:
    nats: str = ""
    processes: list[ProcessStatus] = field(default_factory=list)
    durables: list[DurableStatus] = field(default_factory=list)
    dead_letters: dict[str, int] = field(default_factory=dict)
    streams: list[StreamStatus] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["durables"] = [{**asdict(d), "lag": d.lag} for d in self.durables]
        return out


def processes_from_pids(data_dir: Path) -> tuple[list[ProcessStatus], list[str]]:
    """The processes ``data_dir/run/pids.json`` lists, and the cluster's NATS URLs (empty for ``make run``)."""
    path = data_dir / "run" / "pids.json"
    if not path.exists():
        raise FileNotFoundError(f"no {path}: is a `make cluster` or `make run` using {data_dir}?")
    doc = json.loads(path.read_text())
    if "processes" not in doc:  # `make run`: one process hosts every service, its probe server in probes.json
        pid = doc.get("mnemo")
        probes = data_dir / "run" / "probes.json"
        http = json.loads(probes.read_text()).get("mnemo") if probes.exists() else None
        return [ProcessStatus("mnemo", None, pid, pid_alive(int(pid)) if pid else None, http)], []
    found, urls = [], []
    for p in doc["processes"]:
        if p["name"].startswith("nats-") and p.get("url"):
            urls.append(p["url"])
        if p["kind"] == "service" or p.get("http"):
            alive = pid_alive(int(p["pid"])) and "exit_code" not in p
            found.append(ProcessStatus(p["name"], p.get("replica"), p["pid"], alive, p.get("http")))
    return found, urls


def processes_from_flags(probes: list[str]) -> list[ProcessStatus]:
    out = []
    for item in probes:
        name, sep, url = item.partition("=")
        out.append(ProcessStatus(name if sep else item, http=url if sep else item))
    return out


def _read_probe(process: ProcessStatus) -> None:
    if not process.http:
        process.detail = "no probe server known"
        return
    try:
        with urllib.request.urlopen(f"{process.http.rstrip('/')}/readyz", timeout=PROBE_TIMEOUT_S) as response:
            body = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        body = json.loads(exc.read() or b"{}")
    except (OSError, ValueError) as exc:
        process.ready, process.detail = False, f"probe unreachable: {exc}"
        return
    process.ready = body.get("status") == "ready"
    checks: dict[str, str] = body.get("checks", {})
    failed = [f"{k}: {v}" for k, v in checks.items() if k != "phase" and not str(v).startswith("ok")]
    process.detail = "; ".join(failed) or f"phase {checks.get('phase', '?')}"


async def _durables(nc: NatsClient, report: Report) -> None:
    js = nc.jetstream(timeout=PROBE_TIMEOUT_S)
    for info in await js.streams_info():
        name = info.config.name or ""
        if not _OURS.match(name):
            continue
        state = info.state
        replicas = info.config.num_replicas or 1
        report.streams.append(StreamStatus(name, state.messages, state.bytes, state.consumer_count, replicas))
        if not name.startswith("MNEMO_"):
            continue
        for consumer in await _consumers(js, name):
            config = consumer.config
            if not config.durable_name:
                continue  # ephemeral: an erasure's scan, a shard's follower
            filters = config.filter_subjects or ([config.filter_subject] if config.filter_subject else [])
            part = _PARTITION.search(config.durable_name)
            report.durables.append(
                DurableStatus(
                    name, config.durable_name, ", ".join(filters), f"{part[1]}/{part[2]}" if part else None,
                    consumer.num_pending or 0, consumer.num_ack_pending or 0, consumer.num_redelivered or 0,
                    consumer.num_waiting or 0,
                )
            )  # fmt: skip


async def _consumers(js: Any, stream: str) -> list[Any]:
    """Every consumer of ``stream`` (the API answers 256 a page)."""
    found: list[Any] = []
    while True:
        page = await js.consumers_info(stream, offset=len(found))
        found += page
        if len(page) < 256:
            return found


async def _dead_letters(nc: NatsClient, report: Report) -> None:
    js = nc.jetstream(timeout=PROBE_TIMEOUT_S)
    try:
        info = await js.stream_info(subjects.DLQ_STREAM, subjects_filter=subjects.DLQ_ALL)
    except NotFoundError:
        return
    for subject, count in (info.state.subjects or {}).items():
        service = subject.removeprefix(f"{subjects.DLQ_PREFIX}.").rsplit(".", 1)[0]
        report.dead_letters[service] = report.dead_letters.get(service, 0) + int(count)


async def read_jetstream(nc: NatsClient, report: Report) -> None:
    """The durables (with their lag), dead letters per service and stream sizes NATS ``nc`` shows: ``gather``'s
    reading, which the gateway's operator views (``mnemo/services/gateway/operator.py``) show too."""
    await _durables(nc, report)
    await _dead_letters(nc, report)


async def gather(settings: Settings, processes: list[ProcessStatus]) -> Report:
    """Every process's readiness (probes asked at once) and the deployment's JetStream state."""
    report = Report(nats=settings.nats_url, processes=processes)
    probing = asyncio.gather(*(asyncio.to_thread(_read_probe, p) for p in processes))
    try:
        async with connected(settings) as nc:
            await read_jetstream(nc, report)
    except (ContractError, OSError, TimeoutError) as exc:
        report.problems.append(f"NATS at {settings.nats_url}: {exc}")
    await probing
    report.durables.sort(key=lambda d: (d.stream, d.durable))
    return report
