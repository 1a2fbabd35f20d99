"""``make bench-scale``'s ingest runs on ``mnemo cluster`` and the goals issue 25 sets them (bench/scale.py).

``ingest_scale`` (one entry per cluster run): replicas, msgs/s, ingest CPU-us per message (and its ratio to the
1-replica run's, ``cpu_vs_1_replica``), each replica's share of the messages handled (its
``mnemo_messages_handled_total`` over the sum, from each replica's /metrics), the event log's append conflicts
(``mnemo_eventlog_append_conflicts_total``, summed), the messages recorded out of publish order within their
conversation, and the duplicates. :func:`goals` reads them against the issue's bar at the largest replica count:
every replica's share at least ``SHARE_FLOOR``, CPU per message within ``CPU_CEILING`` of 1 replica's, and no
conflict, reordering or duplicate in any run.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
from prometheus_client.parser import text_string_to_metric_families
from pymongo import AsyncMongoClient

from bench.cluster_proc import cluster
from bench.common import CpuMeter, publish_until_ingested, wait_for_partitions
from bench.ingest import keyed_subjects
from bench.publisher import publisher_process
from mnemo.runtime.catalog import SERVICES
from mnemo.shared import subjects
from mnemo.shared.partitions import ingest_progress
from mnemo.shared.settings import Settings

SHARE_FLOOR = 0.1  # every replica's share of the messages at the largest replica count (issue 25)
CPU_CEILING = 1.15  # ingest CPU per message at most this times the 1-replica run's (issue 25)


def replica_flags(ingest: int, embedding: int = 0) -> str:
    """``--replicas`` running ``ingest`` ingest and ``embedding`` embedding replicas and nothing else."""
    counts = {"ingest": ingest, "embedding": embedding}
    return ",".join(f"{s.name}={counts.get(s.name, 0)}" for s in SERVICES)


@dataclass(frozen=True)
class Run:
    name: str
    msgs_per_s: float
    recorded: int
    service_cpu_s: float  # the ingest processes, summed
    # Each server's CPU seconds: the NATS node(s) (replication) and SecantusDB (the store).
    server_cpu_by_name: dict[str, float]
    publisher_cpu_s: float
    redelivered: int | None = None  # messages the ingest durable delivered more than once (cluster runs)

    @property
    def server_cpu_s(self) -> float:
        """The servers' CPU seconds, summed."""
        return sum(self.server_cpu_by_name.values())

    def report(self, n: int) -> dict[str, Any]:
        return {
            "msgs_per_s": round(self.msgs_per_s, 1),
            "service_cpu_us_per_msg": round(self.service_cpu_s / n * 1e6),
            "server_cpu_us_per_msg": round(self.server_cpu_s / n * 1e6),
            "server_cpu_us_per_msg_by_name": {
                k: round(v / n * 1e6) for k, v in sorted(self.server_cpu_by_name.items())
            },
            "publisher_cpu_us_per_msg": round(self.publisher_cpu_s / n * 1e6),
            "recorded": self.recorded,
            "duplicates": self.recorded - n,
            "redelivered": self.redelivered,
        }


async def recorded_in_log(mongodb_url: str, db: str) -> int:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongodb_url)
    try:
        return await client[db]["events"].count_documents({"type": "message.recorded"})
    finally:
        await client.close()


def _scraped(url: str, family: str) -> float:
    """The sum of a counter's samples on one process's /metrics."""
    with urllib.request.urlopen(f"{url.rstrip('/')}/metrics", timeout=10) as response:
        text = response.read().decode()
    return sum(
        sample.value
        for fam in text_string_to_metric_families(text)
        if fam.name == family
        for sample in fam.samples
        if sample.name.endswith("_total")
    )


async def out_of_order(mongodb_url: str, db: str, bodies: list[bytes]) -> int:
    """Messages recorded at another place in their conversation's log than their publish order gave them."""
    published: dict[str, list[str]] = {}
    for body in bodies:
        doc = json.loads(body)
        published.setdefault(doc["conversation_id"], []).append(doc["message_id"])
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongodb_url)
    try:
        recorded: dict[str, list[tuple[int, str]]] = {}
        cursor = client[db]["events"].find({"type": "message.recorded"}, {"payload": 1})
        async for event in cursor:
            payload = event.get("payload") or {}
            conv, index = payload.get("conversation_id"), payload.get("index")
            if isinstance(conv, str) and isinstance(index, int):
                recorded.setdefault(conv, []).append((index, str(payload.get("message_id"))))
    finally:
        await client.close()
    wrong = 0
    for conv, ids in published.items():
        got = [m for _, m in sorted(recorded.get(conv, []))]
        wrong += sum(1 for a, b in zip(got, ids, strict=False) if a != b)
    return wrong


async def idle_rate(pids: dict[str, int], seconds: float) -> float:
    """The processes' CPU seconds per second, summed, while nothing is published (pull requests expiring, lease
    and member keys refreshed, the outbox polled): what they would spend over a run without doing its work."""
    meter = CpuMeter(pids)
    meter.start()
    await asyncio.sleep(seconds)
    meter.stop()
    return sum(meter.used[k] for k in pids) / meter.elapsed


async def run_cluster(bodies: list[bytes], ingest: int, tmp: Path, idle_s: float) -> tuple[Run, dict[str, Any]]:
    async with cluster(tmp, replica_flags(ingest), f"cluster-{ingest}") as (nats_url, mongodb_url, pids):
        procs = pids["processes"]
        replicas = [p for p in procs if p["kind"] == "service"]
        services = {f"ingest-{p['replica']}": p["pid"] for p in replicas}
        servers = {p["name"]: p["pid"] for p in procs if p["kind"] == "server"}
        if len(services) != ingest:
            raise RuntimeError(f"expected {ingest} ingest replicas, pids.json lists {procs}")
        cpu = CpuMeter({**services, **servers})
        nc = await nats.connect(nats_url)
        try:
            js = nc.jetstream(timeout=30)
            await wait_for_partitions(js, Settings().streams.ingest_partitions, ingest)
            idle = await idle_rate(services, idle_s)
            async with publisher_process(nats_url, keyed_subjects(bodies), bodies) as publisher:
                published, elapsed = await publish_until_ingested(publisher, js, cpu)
            redelivered = 0
            for progress in await ingest_progress(js):
                info = await js.consumer_info(subjects.CHAT_STREAM, progress.durable)
                redelivered += info.num_redelivered or 0
        finally:
            await nc.drain()
        handled = [_scraped(p["http"], "mnemo_messages_handled") for p in replicas]
        conflicts = sum(_scraped(p["http"], "mnemo_eventlog_append_conflicts") for p in replicas)
        recorded = await recorded_in_log(mongodb_url, Settings().mongodb_db)
        disorder = await out_of_order(mongodb_url, Settings().mongodb_db, bodies)
    used = cpu.used
    run = Run(
        f"cluster-{ingest}",
        len(bodies) / elapsed,
        recorded,
        sum(used[k] for k in services),
        {k: used[k] for k in servers},
        published.cpu_seconds,
        redelivered,
    )
    cpu_us = run.service_cpu_s / len(bodies) * 1e6
    idle_us = idle * elapsed / len(bodies) * 1e6  # at most: a busy replica polls no empty partition
    scale = {
        "replicas": ingest,
        "msgs_per_s": round(run.msgs_per_s, 1),
        "cpu_us_per_msg": round(cpu_us),
        "idle_cpu_us_per_msg": round(idle_us),
        "work_cpu_us_per_msg": round(max(0.0, cpu_us - idle_us)),
        "per_replica_share": [round(h / max(1.0, sum(handled)), 3) for h in handled],
        "append_conflicts": int(conflicts),
        "out_of_order": disorder,
        "duplicates": recorded - len(bodies),
    }
    return run, scale


def goals(scale: list[dict[str, Any]]) -> dict[str, Any]:
    """Issue 25's bar for ``ingest_scale`` (each entry gains ``cpu_vs_1_replica`` when a 1-replica run exists)."""
    one = next((s for s in scale if s["replicas"] == 1), None)
    for s in scale:
        for field in ("cpu", "work_cpu"):
            base = one[f"{field}_us_per_msg"] if one else None
            s[f"{field}_vs_1_replica"] = round(s[f"{field}_us_per_msg"] / base, 3) if base else None
    top = max(scale, key=lambda s: int(s["replicas"]))
    shares = top["per_replica_share"]
    met = {
        f"every_share_at_least_{SHARE_FLOOR}": bool(shares) and min(shares) >= SHARE_FLOOR,
        f"cpu_within_{CPU_CEILING}x_of_1_replica": top["cpu_vs_1_replica"] is not None
        and top["cpu_vs_1_replica"] <= CPU_CEILING,
        "no_conflict_reordering_or_duplicate": all(
            s["append_conflicts"] == 0 and s["out_of_order"] == 0 and s["duplicates"] == 0 for s in scale
        ),
    }
    work = top["work_cpu_vs_1_replica"]
    return {
        "at_replicas": top["replicas"],
        "min_share": min(shares, default=0.0),
        **met,
        "met": all(met.values()),
        # Beside the bar, not in it: the same ratio with each run's idle CPU taken off (an idle replica's polling
        # weighs on a slow run's figure; on a busy deployment it is negligible).
        f"work_cpu_within_{CPU_CEILING}x_of_1_replica": work is not None and work <= CPU_CEILING,
    }
