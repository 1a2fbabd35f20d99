"""`make bench-scale`: ingest at 1 and 2 replicas on `mnemo cluster`, beside one process in the same run.

Three runs on fresh servers, the same N payloads (``bench.ingest.payloads``) published by the same publisher
process (``bench.publisher``), each timed from the first publish until the ingest durable has acknowledged
all N messages (it acks after the journaled append and the read-model update):

- one: one ingest service in this process on a single nats-server, as ``bench.ingest`` runs it;
- cluster-1 / cluster-2: ``mnemo cluster`` started as its own process on free ports (three NATS nodes,
  streams at three replicas, SecantusDB) with 1 or 2 ingest replicas and no other service.

For each: msgs/s, CPU microseconds per message summed over the ingest processes (this process in "one",
which also polls the consumer's progress; the replicas in the cluster) and over the servers, and the
duplicates: ``message.recorded`` events in the log minus N (must be 0). The overhead per message is the
ingest processes' CPU per message minus the one-process figure of the same run (and cluster-2 minus
cluster-1: what the second replica adds). The servers' CPU is reported apart: three NATS nodes replicating
every stream cost more than one nats-server, whatever the replicas do. On 2 cores expect little gain from a
second replica; the point is that replicas add no duplicates and little overhead. Embedding is not measured
here (yet): ingest only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
from pymongo import AsyncMongoClient

from bench.cluster_proc import cluster
from bench.common import CpuMeter, embedded_servers, machine, print_result, wait_for_acks
from bench.ingest import measure_ingest, payloads
from bench.publisher import publisher_process
from runtime.catalog import SERVICES
from shared import subjects
from shared.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
READY = "mnemo cluster is serving"


@dataclass(frozen=True)
class Run:
    name: str
    msgs_per_s: float
    recorded: int
    service_cpu_s: float  # the ingest processes, summed
    server_cpu_s: float  # nats-server(s) and SecantusDB, summed
    publisher_cpu_s: float
    redelivered: int | None = None  # messages the ingest durable delivered more than once (cluster runs)

    def report(self, n: int) -> dict[str, Any]:
        return {
            "msgs_per_s": round(self.msgs_per_s, 1),
            "service_cpu_us_per_msg": round(self.service_cpu_s / n * 1e6),
            "server_cpu_us_per_msg": round(self.server_cpu_s / n * 1e6),
            "publisher_cpu_us_per_msg": round(self.publisher_cpu_s / n * 1e6),
            "recorded": self.recorded,
            "duplicates": self.recorded - n,
            "redelivered": self.redelivered,
        }


def replica_flags(ingest: int) -> str:
    """``--replicas`` running ``ingest`` ingest replicas and nothing else."""
    return ",".join(f"{s.name}={ingest if s.name == 'ingest' else 0}" for s in SERVICES)


def overheads(runs: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Ingest processes' CPU-us per message above the one-process run's (and the second replica's)."""
    base = runs["one"]["service_cpu_us_per_msg"]
    out = {f"{name}_vs_one": r["service_cpu_us_per_msg"] - base for name, r in runs.items() if name != "one"}
    if "cluster-1" in runs and "cluster-2" in runs:
        out["cluster-2_vs_cluster-1"] = (
            runs["cluster-2"]["service_cpu_us_per_msg"] - runs["cluster-1"]["service_cpu_us_per_msg"]
        )
    return out


async def recorded_in_log(mongodb_url: str, db: str) -> int:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongodb_url)
    try:
        return await client[db]["events"].count_documents({"type": "message.recorded"})
    finally:
        await client.close()


async def run_one(bodies: list[bytes]) -> Run:
    async with embedded_servers() as backends:
        cpu = CpuMeter(backends.pids)
        nc = await nats.connect(backends.settings.nats_url)
        try:
            js = nc.jetstream(timeout=30)
            rate, recorded = await measure_ingest(backends.settings, js, bodies, cpu)
        finally:
            await nc.drain()
    used = cpu.used
    servers = sum(v for k, v in used.items() if k in backends.pids)
    return Run("one", rate, recorded, used["this process"], servers, used["publisher"])


async def run_cluster(bodies: list[bytes], ingest: int, tmp: Path) -> Run:
    async with cluster(tmp, replica_flags(ingest), f"cluster-{ingest}") as (nats_url, mongodb_url, pids):
        procs = pids["processes"]
        services = {f"ingest-{p['replica']}": p["pid"] for p in procs if p["kind"] == "service"}
        servers = {p["name"]: p["pid"] for p in procs if p["kind"] == "server"}
        if len(services) != ingest:
            raise RuntimeError(f"expected {ingest} ingest replicas, pids.json lists {procs}")
        cpu = CpuMeter({**services, **servers})
        nc = await nats.connect(nats_url)
        try:
            js = nc.jetstream(timeout=30)
            async with publisher_process(nats_url, subjects.MESSAGE_CREATED, bodies) as publisher:
                cpu.start()
                start = time.perf_counter()
                published = await publisher.publish()
                await wait_for_acks(js, subjects.CHAT_STREAM, subjects.durable("ingest"), len(bodies), 600)
                elapsed = time.perf_counter() - start
                cpu.stop()
            info = await js.consumer_info(subjects.CHAT_STREAM, subjects.durable("ingest"))
        finally:
            await nc.drain()
        recorded = await recorded_in_log(mongodb_url, Settings().mongodb_db)
    used = cpu.used
    return Run(
        f"cluster-{ingest}",
        len(bodies) / elapsed,
        recorded,
        sum(used[k] for k in services),
        sum(used[k] for k in servers),
        published.cpu_seconds,
        info.num_redelivered,
    )


async def main(n: int, conversations: int, keep: Path | None = None) -> dict[str, Any]:
    bodies = payloads(n, conversations)
    runs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-scale-") as scratch:
        tmp = keep or scratch
        for label, measure in (
            ("one", lambda: run_one(bodies)),
            ("cluster-1", lambda: run_cluster(bodies, 1, Path(tmp))),
            ("cluster-2", lambda: run_cluster(bodies, 2, Path(tmp))),
        ):
            print(f"{label}: publishing {n:,} messages...", flush=True)
            run = await measure()
            runs[label] = run.report(n)
            r = runs[label]
            print(
                f"{label}: {r['msgs_per_s']:,.0f} msgs/s; ingest processes {r['service_cpu_us_per_msg']} CPU-us per"
                f" message, servers {r['server_cpu_us_per_msg']}, publisher {r['publisher_cpu_us_per_msg']};"
                f" recorded {r['recorded']:,} of {n:,} ({r['duplicates']} duplicates),"
                f" redelivered {r['redelivered']}",
                flush=True,
            )
    over = overheads(runs)
    base = runs["one"]["msgs_per_s"]
    for name, r in runs.items():
        if name != "one":
            print(f"{name}: {r['msgs_per_s'] / base:.2f} of one process's rate, {over[f'{name}_vs_one']:+d} CPU-us/msg")
    if "cluster-2_vs_cluster-1" in over:
        print(f"the second replica adds {over['cluster-2_vs_cluster-1']:+d} CPU-us per message")
    bad = {name: r["duplicates"] for name, r in runs.items() if r["duplicates"]}
    result = {
        "runs": runs,
        "ratio_to_one": {name: round(r["msgs_per_s"] / base, 3) for name, r in runs.items() if name != "one"},
        "overhead_cpu_us_per_msg": over,
        "duplicates": sum(r["duplicates"] for r in runs.values()),
        "messages": n,
        "conversations": conversations,
        **machine(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }
    if bad:
        print_result(result)
        raise SystemExit(f"recorded events differ from the messages published: {bad}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=5_000)
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--keep", type=Path, help="keep the clusters' data and logs under this directory")
    args = parser.parse_args()
    print_result(asyncio.run(main(args.messages, args.conversations, args.keep)))
