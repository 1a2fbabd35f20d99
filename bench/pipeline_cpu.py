"""CPU per message of every pipeline stage, each its own process on ``mnemo cluster``: what binds first at scale.

One replica each of ingest, embedding, summarizer, memory-extractor and context-assembler on 3 NATS nodes and
SecantusDB. Each process's idle CPU is measured for ``--idle-s`` first (consumers poll, heartbeats run). Then ``-n``
messages are published and the run waits until every durable has drained (its lag read as KEDA reads it,
``mnemo.runtime.consumer_lag``): CPU-us per message of each service and server, and its work, the idle rate over
the run taken off (an upper bound of the idle share: a busy consumer does not poll an empty stream). Then
``--requests`` context requests one at a time: the context-assembler's CPU-us per request.

The reference measured in the same run is ingest's work per message: every other stage's is given as a ratio to
it, which is what decides which stage needs the most replicas (and cores) per message. No LLM is configured: the
summarizer and the memory-extractor run their no-LLM paths; with an LLM their CPU per message stays small and the
provider's latency and tokens are what bind (docs/scaling.md). Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nats

from bench.cluster_proc import cluster
from bench.common import CpuMeter, machine, print_result
from bench.ingest import keyed_messages, payloads
from bench.publisher import publish_all
from mnemo.runtime import consumer_lag
from mnemo.runtime.catalog import SERVICES
from mnemo.shared import subjects
from mnemo.shared.settings import StreamsSettings

STAGES = ("ingest", "embedding", "summarizer", "memory-extractor", "context-assembler")
REPLICAS = ",".join(f"{s.name}={1 if s.name in STAGES else 0}" for s in SERVICES)
SERVERS = ("nats-1", "nats-2", "nats-3", "secantusd")


def _pids(doc: dict[str, Any]) -> dict[str, int]:
    return {p["name"]: p["pid"] for p in doc["processes"] if p["name"] in (*STAGES, *SERVERS)}


async def drained(monitors: list[str], timeout_s: float) -> float:
    """Seconds until every worker's durable has no lag, twice in a row (the log gets new events while ingest runs)."""
    start = time.monotonic()
    quiet = 0
    while time.monotonic() - start < timeout_s:
        try:
            lags = [
                await asyncio.to_thread(consumer_lag.read_lag, monitors, w.stream, durable)
                for w in consumer_lag.WORKERS
                for durable in w.all_durables(StreamsSettings().ingest_partitions)
            ]
        except consumer_lag.LagReadError:  # a durable not created yet, or its leader being elected
            lags = []
        quiet = quiet + 1 if lags and all(lag.lag == 0 for lag in lags) else 0
        if quiet >= 2:
            return time.monotonic() - start
        await asyncio.sleep(1.0)
    raise TimeoutError(f"the durables did not drain in {timeout_s:.0f}s")


def context_request(i: int, conversations: int) -> bytes:
    conv = i % conversations
    request = {"tenant_id": "bench", "user_id": f"user-{conv}", "conversation_id": f"conv-{conv}", "bot_id": "bot",
               "user_message": "What did we say about the storm and the map?", "max_tokens": 1500}  # fmt: skip
    return json.dumps(request).encode()


def per_item(used: dict[str, float], items: int) -> dict[str, int]:
    """CPU-us per item of each process over the run."""
    return {name: round(used[name] / items * 1e6) for name in used}


def idle_per_item(idle: dict[str, float], seconds: float, items: int) -> dict[str, int]:
    """What each process would have spent idle over the run, per item: the part of its figure that is not the work
    (polls, heartbeats, the lease), an upper bound since a busy consumer does not poll an empty stream."""
    return {name: round(rate * seconds / items * 1e6) for name, rate in idle.items()}


async def main(n: int, conversations: int, requests: int, idle_s: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-pipeline-") as tmp:
        async with cluster(Path(tmp), REPLICAS, "pipeline") as (nats_url, _mongodb_url, doc):
            pids = _pids(doc)
            monitors = [p["monitor"] for p in doc["processes"] if p["name"].startswith("nats-")]
            await drained(monitors, 120)
            meter = CpuMeter(pids)
            meter.start()
            await asyncio.sleep(idle_s)
            meter.stop()
            idle = {name: used / meter.elapsed for name, used in meter.used.items()}
            print("idle CPU (share of a core): " + ", ".join(f"{k} {v:.3f}" for k, v in idle.items()), flush=True)

            nc = await nats.connect(nats_url)
            try:
                meter = CpuMeter(pids)
                meter.start()
                await publish_all(nc.jetstream(), keyed_messages(payloads(n, conversations)))
                seconds = await drained(monitors, 1800)
                meter.stop()
                pipeline, pipeline_idle = per_item(meter.used, n), idle_per_item(idle, meter.elapsed, n)
                print(f"{n:,} messages through every stage in {seconds:.1f}s; CPU-us per message: {pipeline}")
                print(f"  of which idle at most: {pipeline_idle}", flush=True)
                log_events = (await nc.jetstream().stream_info(subjects.LOG_STREAM)).state.messages

                meter = CpuMeter(pids)
                meter.start()
                failed = 0
                for i in range(requests):
                    reply = json.loads(
                        (
                            await nc.request(subjects.CONTEXT_ASSEMBLE, context_request(i, conversations), timeout=30)
                        ).data
                    )
                    failed += "error" in reply
                meter.stop()
                context = per_item(meter.used, requests)
                context_seconds = meter.elapsed
                context_idle = idle_per_item(idle, meter.elapsed, requests)["context-assembler"]
                context_work = max(0, context["context-assembler"] - context_idle)
                print(
                    f"{requests} context requests in {meter.elapsed:.1f}s ({failed} errors); CPU-us per request: {context}"
                )
            finally:
                await nc.close()
    work = {k: max(0, pipeline[k] - pipeline_idle[k]) for k in pipeline}
    reference = work["ingest"]

    def to_reference(us: float) -> float | None:
        # None when ingest's work rounds to 0: on a tiny run the CPU clock's 10 ms ticks and the idle rate's
        # upper bound can leave nothing to divide by, and a ratio to nothing is not a figure.
        return round(us / reference, 2) if reference else None

    return {
        "bench": "pipeline_cpu",
        "date": datetime.now(UTC).isoformat(timespec="minutes"),
        "machine": machine(),
        "messages": n,
        "conversations": conversations,
        "seconds": round(seconds, 1),
        "log_events_per_message": round(log_events / n, 2),
        "cpu_us_per_message": {k: pipeline[k] for k in (*STAGES[:4], *SERVERS)},
        "idle_us_per_message_at_most": {k: pipeline_idle[k] for k in (*STAGES[:4], *SERVERS)},
        "work_us_per_message": {k: work[k] for k in (*STAGES[:4], *SERVERS)},
        "work_ratio_to_ingest": {k: to_reference(work[k]) for k in STAGES[:4]},
        "context_requests": requests,
        "context_errors": failed,
        "context_seconds": round(context_seconds, 1),
        "context_cpu_us_per_request": {k: context[k] for k in ("context-assembler", *SERVERS)},
        "context_work_us_per_request": context_work,
        "context_work_ratio_to_ingest_message": to_reference(context_work),
        "idle_share_of_core": {k: round(v, 3) for k, v in idle.items()},
    }


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=2000, help="messages to publish")
    parser.add_argument("--conversations", type=int, default=20)
    parser.add_argument("--requests", type=int, default=200, help="context requests after the pipeline drained")
    parser.add_argument("--idle-s", type=float, default=10.0, help="seconds of idle CPU measured first")
    args = parser.parse_args()
    print_result(asyncio.run(main(args.n, args.conversations, args.requests, args.idle_s)))


if __name__ == "__main__":
    cli()
