"""`make bench-scale`: ingest and embedding at 1 and 2 replicas on `mnemo cluster`, beside one process (ingest)
and the raw model (embedding) in the same run.

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
second replica; the point is that replicas add no duplicates and little overhead.

Embedding: ``embedding-1`` / ``embedding-2`` start a cluster with one ingest replica and 1 or 2 embedding
replicas (stream vector mode, as ``mnemo cluster`` runs it), publish the same N messages and time them from the
first publish until the embedding durable has acknowledged every log event. The reference is the bundled model
itself in this process on the same N texts (``raw``, texts/s), measured just before. Reported: texts/s and its
ratio to the raw model, embedding CPU-us per text, points in ``MNEMO_POINTS`` (one per text: a second replica
must not write a point twice under another id) and the durable's redeliveries.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
from nats.js import JetStreamContext
from pymongo import AsyncMongoClient

from bench.cluster_proc import cluster
from bench.common import CpuMeter, embedded_servers, machine, print_result, wait_for_acks
from bench.ingest import measure_ingest, payloads
from bench.publisher import Published, PublisherProcess, publisher_process
from mnemo.runtime.catalog import SERVICES
from mnemo.shared import subjects
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.settings import Settings

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


def replica_flags(ingest: int, embedding: int = 0) -> str:
    """``--replicas`` running ``ingest`` ingest and ``embedding`` embedding replicas and nothing else."""
    counts = {"ingest": ingest, "embedding": embedding}
    return ",".join(f"{s.name}={counts.get(s.name, 0)}" for s in SERVICES)


def texts_of(bodies: list[bytes]) -> list[str]:
    return [json.loads(b)["content"] for b in bodies]


def raw_model_rate(texts: list[str]) -> float:
    """The bundled model alone on ``texts``, in batches as the embedding service sends them: texts/s."""
    embedder = BundledEmbedder()
    embedder.embed_sync(texts[:64])  # load and warm
    start = time.perf_counter()
    for i in range(0, len(texts), 256):
        embedder.embed_sync(texts[i : i + 256])
    return len(texts) / (time.perf_counter() - start)


async def log_settled(js: JetStreamContext, mongodb_url: str, timeout_s: float) -> int:
    """Once every recorded event is relayed to ``MNEMO_LOG``: its last sequence (what the embedding acks)."""
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongodb_url)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            events = await client[Settings().mongodb_db]["events"].count_documents({})
            relayed = (await js.stream_info(subjects.LOG_STREAM)).state.last_seq
            if relayed >= events or time.monotonic() > deadline:
                return relayed
            await asyncio.sleep(0.1)
    finally:
        await client.close()


async def publish_and_ingest(publisher: PublisherProcess, js: JetStreamContext, n: int) -> tuple[float, Published]:
    """Publish the ``n`` messages and wait until the ingest durable has acknowledged them all: (start, the
    publisher's report)."""
    start = time.perf_counter()
    published = await publisher.publish()
    await wait_for_acks(js, subjects.CHAT_STREAM, subjects.durable("ingest"), n, 600)
    return start, published


async def run_embedding(bodies: list[bytes], replicas: int, raw_rate: float, tmp: Path) -> dict[str, Any]:
    label = f"embedding-{replicas}"
    async with cluster(tmp, replica_flags(1, replicas), label) as (nats_url, mongodb_url, pids):
        procs = pids["processes"]
        workers = {f"embedding-{p['replica']}": p["pid"] for p in procs if p["name"] == "embedding"}
        cpu = CpuMeter(workers)
        nc = await nats.connect(nats_url)
        try:
            js = nc.jetstream(timeout=30)
            async with publisher_process(nats_url, subjects.MESSAGE_CREATED, bodies) as publisher:
                cpu.start()
                start, _ = await publish_and_ingest(publisher, js, len(bodies))
                relayed = await log_settled(js, mongodb_url, 120)
                await wait_for_acks(js, subjects.LOG_STREAM, subjects.durable("embedding"), relayed, 1200)
                elapsed = time.perf_counter() - start
                cpu.stop()
            info = await js.consumer_info(subjects.LOG_STREAM, subjects.durable("embedding"))
            points = (await js.stream_info(subjects.POINTS_STREAM)).state.messages
        finally:
            await nc.drain()
    rate = len(bodies) / elapsed
    return {
        "texts_per_s": round(rate, 1),
        "ratio_to_raw_model": round(rate / raw_rate, 3),
        "embedding_cpu_us_per_text": round(sum(cpu.used[k] for k in workers) / len(bodies) * 1e6),
        "points": points,
        "redelivered": info.num_redelivered,
        "label": label,
    }


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
                start, published = await publish_and_ingest(publisher, js, len(bodies))
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
        measures: list[tuple[str, Callable[[], Awaitable[Run]]]] = [
            ("one", lambda: run_one(bodies)),
            ("cluster-1", lambda: run_cluster(bodies, 1, Path(tmp))),
            ("cluster-2", lambda: run_cluster(bodies, 2, Path(tmp))),
        ]
        for label, measure in measures:
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
    texts = texts_of(bodies)
    raw = raw_model_rate(texts)
    print(f"raw model: {raw:,.0f} texts/s on the same {len(texts):,} texts", flush=True)
    embedding: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-scale-") as scratch:
        for replicas in (1, 2):
            print(f"embedding-{replicas}: publishing {n:,} messages...", flush=True)
            e = await run_embedding(bodies, replicas, raw, Path(keep or scratch))
            embedding[e.pop("label")] = e
            print(
                f"embedding-{replicas}: {e['texts_per_s']:,.0f} texts/s ({e['ratio_to_raw_model']:.2f} of the raw"
                f" model), {e['embedding_cpu_us_per_text']} CPU-us per text; {e['points']:,} points for {n:,}"
                f" texts, redelivered {e['redelivered']}",
                flush=True,
            )
    if embedding:
        embedding["embedding-2"]["overhead_cpu_us_per_text"] = (
            embedding["embedding-2"]["embedding_cpu_us_per_text"]
            - embedding["embedding-1"]["embedding_cpu_us_per_text"]
        )
    bad = {name: r["duplicates"] for name, r in runs.items() if r["duplicates"]}
    bad.update({name: e["points"] - n for name, e in embedding.items() if e["points"] != n})
    result = {
        "runs": runs,
        "raw_model_texts_per_s": round(raw, 1),
        "embedding": embedding,
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
