"""`make bench-scale`: ingest at 1, 2 and 3 replicas (``--ingest-replicas``) and embedding at 1 and 2 on `mnemo
cluster`, beside one process (ingest) and the raw model (embedding) in the same run.

Three runs on fresh servers, the same N payloads (``bench.ingest.payloads``) published by the same publisher
process (``bench.publisher``), each timed from the first publish until the ingest durable has acknowledged
all N messages (it acks after the journaled append and the read-model update):

- one: one ingest service in this process on a single nats-server, as ``bench.ingest`` runs it;
- cluster-1 / cluster-2 / cluster-3: ``mnemo cluster`` started as its own process on free ports (three NATS
  nodes, streams at three replicas, SecantusDB) with that many ingest replicas and no other service. Ingest is
  partitioned (mnemo/shared/partitions.py): the messages are published on their keyed subjects, as the clients
  publish them, and timing starts once the partitions are dealt among the replicas (each replica holds some).

For each: msgs/s, CPU microseconds per message summed over the ingest processes (this process in "one",
which also polls the consumer's progress; the replicas in the cluster) and over the servers, and the
duplicates: ``message.recorded`` events in the log minus N (must be 0). The overhead per message is the
ingest processes' CPU per message minus the one-process figure of the same run (and cluster-2 minus
cluster-1: what the second replica adds). The servers' CPU is reported apart: three NATS nodes replicating
every stream cost more than one nats-server, whatever the replicas do. On 2 cores shared with three NATS nodes and
SecantusDB, expect little gain from more replicas; the point is that every replica takes a share of the write
path and that replicas add no duplicates, no reordering, no append conflicts and little CPU per message.

``ingest_scale`` (one entry per cluster run): replicas, msgs/s, ingest CPU-us per message, each replica's share
of the messages handled (its ``mnemo_messages_handled_total`` over the sum, from each replica's /metrics),
the event log's append conflicts (``mnemo_eventlog_append_conflicts_total``, summed), the messages recorded out
of publish order within their conversation, and the duplicates.

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
import functools
import json
import logging
import os
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
from nats.js import JetStreamContext
from prometheus_client.parser import text_string_to_metric_families
from pymongo import AsyncMongoClient

from bench.cluster_proc import cluster
from bench.common import (
    CpuMeter,
    embedded_servers,
    machine,
    print_result,
    wait_for_acks,
    wait_for_ingest,
    wait_for_partitions,
)
from bench.ingest import keyed_subjects, measure_ingest, payloads
from bench.publisher import Published, PublisherProcess, publisher_process
from mnemo.runtime.catalog import SERVICES
from mnemo.shared import subjects
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.partitions import ingest_progress
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
    await wait_for_ingest(js, timeout_s=600)
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
            await wait_for_partitions(js, Settings().streams.ingest_partitions, 1)
            async with publisher_process(nats_url, keyed_subjects(bodies), bodies) as publisher:
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


def reference(runs: dict[str, dict[str, Any]]) -> str:
    """The run the others are compared with: one process, or (``--no-one``) the cluster's first run."""
    return "one" if "one" in runs else next(iter(runs))


def overheads(runs: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Ingest processes' CPU-us per message above the one-process run's (and the second replica's)."""
    ref = reference(runs)
    base = runs[ref]["service_cpu_us_per_msg"]
    out = {f"{name}_vs_{ref}": r["service_cpu_us_per_msg"] - base for name, r in runs.items() if name != ref}
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


async def run_cluster(bodies: list[bytes], ingest: int, tmp: Path) -> tuple[Run, dict[str, Any]]:
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
            async with publisher_process(nats_url, keyed_subjects(bodies), bodies) as publisher:
                cpu.start()
                start = time.perf_counter()
                published = await publisher.publish()
                await wait_for_ingest(js, timeout_s=600)
                elapsed = time.perf_counter() - start
                cpu.stop()
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
        sum(used[k] for k in servers),
        published.cpu_seconds,
        redelivered,
    )
    scale = {
        "replicas": ingest,
        "msgs_per_s": round(run.msgs_per_s, 1),
        "cpu_us_per_msg": round(run.service_cpu_s / len(bodies) * 1e6),
        "per_replica_share": [round(h / max(1.0, sum(handled)), 3) for h in handled],
        "append_conflicts": int(conflicts),
        "out_of_order": disorder,
        "duplicates": recorded - len(bodies),
    }
    return run, scale


async def main(
    n: int, conversations: int, keep: Path | None = None, ingest_replicas: tuple[int, ...] = (1, 2, 3),
    embedding_runs: bool = True, one: bool = True,
) -> dict[str, Any]:  # fmt: skip
    bodies = payloads(n, conversations)
    runs: dict[str, dict[str, Any]] = {}
    ingest_scale: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-scale-") as scratch:
        tmp = keep or scratch

        async def clustered(replicas: int) -> Run:
            run, scale = await run_cluster(bodies, replicas, Path(tmp))
            ingest_scale.append(scale)
            print(f"cluster-{replicas}: {scale}", flush=True)
            return run

        measures: list[tuple[str, Callable[[], Awaitable[Run]]]] = [("one", lambda: run_one(bodies))] if one else []
        measures += [(f"cluster-{r}", functools.partial(clustered, r)) for r in ingest_replicas]
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
    ref = reference(runs)
    base = runs[ref]["msgs_per_s"]
    for name, r in runs.items():
        if name != ref:
            print(f"{name}: {r['msgs_per_s'] / base:.2f} of {ref}'s rate, {over[f'{name}_vs_{ref}']:+d} CPU-us/msg")
    if "cluster-2_vs_cluster-1" in over:
        print(f"the second replica adds {over['cluster-2_vs_cluster-1']:+d} CPU-us per message")
    texts = texts_of(bodies)
    raw = raw_model_rate(texts) if embedding_runs else 0.0  # the embedding runs' reference only
    if embedding_runs:
        print(f"raw model: {raw:,.0f} texts/s on the same {len(texts):,} texts", flush=True)
    embedding: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-scale-") as scratch:
        for replicas in (1, 2) if embedding_runs else ():
            print(f"embedding-{replicas}: publishing {n:,} messages...", flush=True)
            e = await run_embedding(bodies, replicas, raw, Path(keep or scratch))
            embedding[e.pop("label")] = e
            print(
                f"embedding-{replicas}: {e['texts_per_s']:,.0f} texts/s ({e['ratio_to_raw_model']:.2f} of the raw"
                f" model), {e['embedding_cpu_us_per_text']} CPU-us per text; {e['points']:,} points for {n:,}"
                f" texts, redelivered {e['redelivered']}",
                flush=True,
            )
    if "embedding-2" in embedding:
        embedding["embedding-2"]["overhead_cpu_us_per_text"] = (
            embedding["embedding-2"]["embedding_cpu_us_per_text"]
            - embedding["embedding-1"]["embedding_cpu_us_per_text"]
        )
    bad = {name: r["duplicates"] for name, r in runs.items() if r["duplicates"]}
    bad.update({f"cluster-{s['replicas']} out of order": s["out_of_order"] for s in ingest_scale if s["out_of_order"]})
    bad.update({name: e["points"] - n for name, e in embedding.items() if e["points"] != n})
    result = {
        "ingest_scale": ingest_scale,
        "runs": runs,
        "raw_model_texts_per_s": round(raw, 1),
        "embedding": embedding,
        "reference": ref,
        f"ratio_to_{ref}": {name: round(r["msgs_per_s"] / base, 3) for name, r in runs.items() if name != ref},
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
    parser.add_argument("--ingest-replicas", default="1,2,3", help="the cluster runs' ingest replica counts")
    parser.add_argument("--no-embedding", action="store_true", help="skip the embedding runs")
    parser.add_argument("--no-one", action="store_true", help="skip the one-process run (cluster-1 is the reference)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)  # a replica's warnings (a tick failed, a lease lost) are shown
    replicas = tuple(int(r) for r in args.ingest_replicas.split(","))
    print_result(
        asyncio.run(
            main(
                args.messages,
                args.conversations,
                args.keep,
                replicas,
                embedding_runs=not args.no_embedding,
                one=not args.no_one,
            )
        )
    )
