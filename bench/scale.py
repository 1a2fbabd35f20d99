"""`make bench-scale`: ingest at 1, 2 and 4 replicas (``--ingest-replicas``) and embedding at 1 and 2 on `mnemo
cluster`, beside one process (ingest) and the raw model (embedding) in the same run.

Three runs on fresh servers, the same N payloads (``bench.ingest.payloads``) published by the same publisher
process (``bench.publisher``), each timed from the first publish until the ingest durable has acknowledged
all N messages (it acks after the journaled append and the read-model update):

- one: one ingest service in this process on a single nats-server, as ``bench.ingest`` runs it;
- cluster-1 / cluster-2 / cluster-4: ``mnemo cluster`` started as its own process on free ports (three NATS
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

``ingest_scale`` (one entry per cluster run) and ``ingest_scale_goals`` (issue 25's bar: every replica's share at
least 0.1 and CPU per message within 1.15x of 1 replica's at the largest count, no conflict, reordering or
duplicate): bench/scale_ingest.py. Duplicates, reordering and conflicts exit 1; the goals are figures, reported.

Embedding: ``embedding-1`` / ``embedding-2`` start a cluster with one ingest replica and 1 or 2 embedding
replicas (stream vector mode, as ``mnemo cluster`` runs it), publish the same N messages and time them from the
first publish until the embedding durable has acknowledged every log event. The reference is the bundled model
itself in this process on the same N texts (``raw``, texts/s), measured before and after each embedding run (the
mean of the two is that run's reference: the shared VM's speed drifts within minutes). Timing starts once every
embedding replica has a pull request waiting (its start-up is not timed). Reported: texts/s and its ratio to the
raw model, from the first publish (ingest's work shares the cores) and for the backlog the durable still holds
once ingest is done (the model then shares them only with the servers: bench-embedding's situation), the
embedding replicas' and the servers' CPU-us per text (the backlog's per process: ``backlog_cpu_us_per_text``),
points in ``MNEMO_POINTS`` (one per text: a second replica must not write a point twice under another id) and
the durable's redeliveries. ``--no-ingest`` runs the embedding part alone, ``--embedding-replicas 1`` only its
first run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import logging
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import nats
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError
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
from bench.scale_ingest import Run, goals, replica_flags, run_cluster
from mnemo.shared import subjects
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
READY = "mnemo cluster is serving"


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


async def wait_for_pullers(js: JetStreamContext, durable: str, replicas: int, timeout_s: float) -> bool:
    """Once ``replicas`` pull requests wait on ``durable`` of the log (each replica started and pulling): the
    replicas' start-up (imports, the model's load: seconds on a loaded VM) is then not timed as embedding."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(NotFoundError):
            if (await js.consumer_info(subjects.LOG_STREAM, durable)).num_waiting >= replicas:
                return True
        await asyncio.sleep(0.2)
    return False


async def publish_and_ingest(publisher: PublisherProcess, js: JetStreamContext, n: int) -> tuple[float, Published]:
    """Publish the ``n`` messages and wait until the ingest durable has acknowledged them all: (start, the
    publisher's report)."""
    start = time.perf_counter()
    published = await publisher.publish()
    await wait_for_ingest(js, timeout_s=600)
    return start, published


def ratios_to_raw(e: dict[str, Any], raw: float) -> dict[str, Any]:
    return {
        "raw_model_texts_per_s": round(raw, 1),
        "ratio_to_raw_model": round(e["texts_per_s"] / raw, 3),
        "backlog_ratio_to_raw_model": round(e["backlog_texts_per_s"] / raw, 3),
    }


async def run_embedding(bodies: list[bytes], replicas: int, tmp: Path) -> dict[str, Any]:
    label = f"embedding-{replicas}"
    async with cluster(tmp, replica_flags(1, replicas), label) as (nats_url, mongodb_url, pids):
        procs = pids["processes"]
        workers = {f"embedding-{p['replica']}": p["pid"] for p in procs if p["name"] == "embedding"}
        servers = {p["name"]: p["pid"] for p in procs if p["kind"] == "server"}
        procs_measured = {**workers, **servers}
        cpu = CpuMeter(procs_measured)
        nc = await nats.connect(nats_url)
        try:
            js = nc.jetstream(timeout=30)
            await wait_for_partitions(js, Settings().streams.ingest_partitions, 1)
            if not await wait_for_pullers(js, subjects.durable("embedding"), replicas, 120):
                print(f"  {label}: the embedding replicas were not all pulling after 120 s; timing anyway", flush=True)
            async with publisher_process(nats_url, keyed_subjects(bodies), bodies) as publisher:
                cpu.start()
                start, _ = await publish_and_ingest(publisher, js, len(bodies))
                relayed = await log_settled(js, mongodb_url, 120)
                # From here ingest is done: what the durable still holds is embedded alone, as bench-embedding
                # times it (events already in the log), so the model shares the cores with no ingest work.
                backlog_start = time.perf_counter()
                backlog_cpu = CpuMeter(procs_measured)  # where the backlog's time goes, per process
                backlog_cpu.start()
                held = await js.consumer_info(subjects.LOG_STREAM, subjects.durable("embedding"))
                backlog = held.num_pending + held.num_ack_pending
                await wait_for_acks(js, subjects.LOG_STREAM, subjects.durable("embedding"), relayed, 1200)
                elapsed = time.perf_counter() - start
                backlog_s = time.perf_counter() - backlog_start
                cpu.stop()
                backlog_cpu.stop()
            info = await js.consumer_info(subjects.LOG_STREAM, subjects.durable("embedding"))
            points = (await js.stream_info(subjects.POINTS_STREAM)).state.messages
        finally:
            await nc.drain()
    return {
        "texts_per_s": round(len(bodies) / elapsed, 1),
        "backlog_events": backlog,
        "backlog_texts_per_s": round(backlog / backlog_s if backlog else 0.0, 1),
        "embedding_cpu_us_per_text": round(sum(cpu.used[k] for k in workers) / len(bodies) * 1e6),
        "server_cpu_us_per_text": round(sum(cpu.used[k] for k in servers) / len(bodies) * 1e6),
        "backlog_cpu_us_per_text": {
            name: round(used / backlog * 1e6) for name, used in backlog_cpu.used.items() if name in procs_measured
        }
        if backlog
        else {},
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
    servers = {k: v for k, v in used.items() if k in backends.pids}
    return Run("one", rate, recorded, used["this process"], servers, used["publisher"])


async def main(
    n: int, conversations: int, keep: Path | None = None, ingest_replicas: tuple[int, ...] = (1, 2, 4),
    embedding_replicas: tuple[int, ...] = (1, 2), one: bool = True, idle_s: float = 5.0,
) -> dict[str, Any]:  # fmt: skip
    bodies = payloads(n, conversations)
    runs: dict[str, dict[str, Any]] = {}
    ingest_scale: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-scale-") as scratch:
        tmp = keep or scratch

        async def clustered(replicas: int) -> Run:
            run, scale = await run_cluster(bodies, replicas, Path(tmp), idle_s)
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
                f" message, servers {r['server_cpu_us_per_msg']} ({r['server_cpu_us_per_msg_by_name']}),"
                f" publisher {r['publisher_cpu_us_per_msg']};"
                f" recorded {r['recorded']:,} of {n:,} ({r['duplicates']} duplicates),"
                f" redelivered {r['redelivered']}",
                flush=True,
            )
    over = overheads(runs) if runs else {}
    ref = reference(runs) if runs else "none"
    base = runs[ref]["msgs_per_s"] if runs else 0.0
    for name, r in runs.items():
        if name != ref:
            print(f"{name}: {r['msgs_per_s'] / base:.2f} of {ref}'s rate, {over[f'{name}_vs_{ref}']:+d} CPU-us/msg")
    if "cluster-2_vs_cluster-1" in over:
        print(f"the second replica adds {over['cluster-2_vs_cluster-1']:+d} CPU-us per message")
    texts = texts_of(bodies)
    embedding: dict[str, dict[str, Any]] = {}
    raws: list[float] = []
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-scale-") as scratch:
        # The raw model brackets every embedding run (measured before and after it, the mean its reference), as
        # bench-embedding does: the shared VM's speed moves within minutes, and one figure taken first would
        # credit or charge the later runs with the load's drift.
        if embedding_replicas:
            raws.append(raw_model_rate(texts))
        for replicas in embedding_replicas:
            print(f"raw model: {raws[-1]:,.0f} texts/s on the same {len(texts):,} texts", flush=True)
            print(f"embedding-{replicas}: publishing {n:,} messages...", flush=True)
            e = await run_embedding(bodies, replicas, Path(keep or scratch))
            raws.append(raw_model_rate(texts))
            raw_ref = (raws[-2] + raws[-1]) / 2
            e |= ratios_to_raw(e, raw_ref)
            embedding[e.pop("label")] = e
            print(
                f"embedding-{replicas}: {e['texts_per_s']:,.0f} texts/s ({e['ratio_to_raw_model']:.2f} of the raw"
                f" model's {raw_ref:,.0f} before/after), {e['embedding_cpu_us_per_text']} CPU-us per text, servers"
                f" {e['server_cpu_us_per_text']}; after ingest, its backlog of {e['backlog_events']:,} events alone:"
                f" {e['backlog_texts_per_s']:,.0f} texts/s ({e['backlog_ratio_to_raw_model']:.2f});"
                f" {e['points']:,} points for {n:,} texts, redelivered {e['redelivered']}",
                flush=True,
            )
            print(f"  its backlog's CPU-us per text, per process: {e['backlog_cpu_us_per_text']}", flush=True)
    raw = sum(raws) / len(raws) if raws else 0.0
    if "embedding-2" in embedding:
        embedding["embedding-2"]["overhead_cpu_us_per_text"] = (
            embedding["embedding-2"]["embedding_cpu_us_per_text"]
            - embedding["embedding-1"]["embedding_cpu_us_per_text"]
        )
    bad = {name: r["duplicates"] for name, r in runs.items() if r["duplicates"]}
    for s in ingest_scale:
        for what in ("out_of_order", "append_conflicts"):
            if s[what]:
                bad[f"cluster-{s['replicas']} {what}"] = s[what]
    scale_goals = goals(ingest_scale) if ingest_scale else {}
    if scale_goals:
        print(f"issue 25's bar at {scale_goals['at_replicas']} replicas: {scale_goals}", flush=True)
    bad.update({name: e["points"] - n for name, e in embedding.items() if e["points"] != n})
    result = {
        "ingest_scale": ingest_scale,
        "ingest_scale_goals": scale_goals,
        "runs": runs,
        "raw_model_texts_per_s": round(raw, 1),
        "embedding": embedding,
        "reference": ref,
        **(
            {f"ratio_to_{ref}": {k: round(r["msgs_per_s"] / base, 3) for k, r in runs.items() if k != ref}}
            if runs
            else {}
        ),
        "overhead_cpu_us_per_msg": over,
        "duplicates": sum(r["duplicates"] for r in runs.values()),
        "messages": n,
        "conversations": conversations,
        **machine(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }
    if bad:
        print_result(result)
        raise SystemExit(f"recorded events differ from the messages published, or appends conflicted: {bad}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=5_000)
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--keep", type=Path, help="keep the clusters' data and logs under this directory")
    parser.add_argument("--ingest-replicas", default="1,2,4", help="the cluster runs' ingest replica counts")
    parser.add_argument("--no-embedding", action="store_true", help="skip the embedding runs")
    parser.add_argument("--embedding-replicas", default="1,2", help="the embedding runs' replica counts")
    parser.add_argument("--idle-s", type=float, default=5.0, help="seconds of the replicas' idle CPU measured first")
    parser.add_argument("--no-one", action="store_true", help="skip the one-process run (cluster-1 is the reference)")
    parser.add_argument(
        "--no-ingest", action="store_true", help="skip the ingest runs (one and cluster): embedding only"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)  # a replica's warnings (a tick failed, a lease lost) are shown
    replicas = () if args.no_ingest else tuple(int(r) for r in args.ingest_replicas.split(","))
    print_result(
        asyncio.run(
            main(
                args.messages,
                args.conversations,
                args.keep,
                replicas,
                embedding_replicas=()
                if args.no_embedding
                else tuple(int(r) for r in args.embedding_replicas.split(",")),
                one=not (args.no_one or args.no_ingest),
                idle_s=args.idle_s,
            )
        )
    )
