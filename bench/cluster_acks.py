"""What acknowledging each message costs a three-node NATS cluster, beside acknowledging each batch once and not
acknowledging at all, in the same run (issue 26, item 5: is ingest's per-message ack worth replacing?).

Ingest's durables acknowledge every message (``AckPolicy.EXPLICIT``, ``mnemo/shared/delivery/pull.py``). On a
cluster the consumer is replicated: the server proposes each ack to the consumer's three replicas (nats-server's
``consumer.updateAcks``). ``AckPolicy.ALL`` would let a batch be acknowledged by its last message, but an ack then
also settles every earlier message, including one naked for a retry; ingest would have to hold the acks behind
any message that failed. This measures what that would save before anyone builds it.

Three nodes started as ``mnemo cluster`` starts them (``mnemo.runtime.servers.start_nats_node``), one stream of
three replicas holding ``--messages`` payloads of 600 bytes, then per mode a fresh durable of three replicas (and
one of a single replica, explicit acks) drained with fetches of ``--batch``, ack policy as named. Reported per
mode: messages per second and the three servers' CPU per message while it drains, and the CPU per message above
the ``none`` mode's (no ack at all: the reference, the same messages delivered by the same servers). Each mode
runs ``--rounds`` times, interleaved. Ends with one JSON line.

``.venv/bin/python -m bench.cluster_acks`` (20,000 messages, 2 rounds: about 15 s).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import nats
from nats.aio.client import Client as NatsClient
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StreamConfig

from bench.common import CpuMeter, machine, print_result
from mnemo.runtime.nats_cluster import plan_nodes, wait_for_cluster
from mnemo.runtime.servers import free_port, start_nats_node

STREAM = "BENCH_ACKS"
#: mode -> (ack policy, consumer replicas; 0: the stream's, three)
MODES: dict[str, tuple[AckPolicy, int]] = {
    "none": (AckPolicy.NONE, 0),
    "explicit": (AckPolicy.EXPLICIT, 0),
    "all_per_batch": (AckPolicy.ALL, 0),
    "explicit_1_replica": (AckPolicy.EXPLICIT, 1),
}


async def drain(
    nc: NatsClient, durable: str, mode: str, n: int, batch: int, cpu: CpuMeter, server_names: Sequence[str]
) -> dict[str, float]:
    """Deliver the stream's ``n`` messages to a new durable acknowledged as ``mode`` says; its rate and the CPU of
    ``server_names`` (of ``cpu``'s processes)."""
    js = nc.jetstream(timeout=30)
    policy, replicas = MODES[mode]
    config = ConsumerConfig(
        durable_name=durable,
        ack_policy=policy,
        deliver_policy=DeliverPolicy.ALL,
        max_ack_pending=n,
        ack_wait=60,
        num_replicas=replicas,
    )
    await js.add_consumer(STREAM, config)
    sub = await js.pull_subscribe_bind(durable, STREAM)
    cpu.start()
    began, got = time.perf_counter(), 0
    while got < n:
        msgs = await sub.fetch(batch, timeout=10)
        got += len(msgs)
        if policy == AckPolicy.EXPLICIT:
            for msg in msgs:
                await msg.ack()
        elif policy == AckPolicy.ALL:
            await msgs[-1].ack()
    await nc.flush()  # the acks sent, before the clock stops
    elapsed = time.perf_counter() - began
    await asyncio.sleep(0.3)  # the followers apply the last proposals
    cpu.stop()
    servers = sum(cpu.used[name] for name in server_names)
    return {"msgs_per_s": n / elapsed, "server_cpu_us_per_msg": servers / n * 1e6}


async def measure(n: int, batch: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-acks-") as tmp:
        nodes = plan_nodes(f"nats://127.0.0.1:{free_port()}")
        servers = [start_nats_node(node, nodes, Path(tmp)) for node in nodes]
        try:
            wait_for_cluster(nodes)
            names = [s.name for s in servers]
            cpu = CpuMeter({s.name: s.process.pid for s in servers})
            nc = await nats.connect(nodes[0].url)
            try:
                js = nc.jetstream(timeout=30)
                await js.add_stream(StreamConfig(name=STREAM, subjects=["bench.acks.>"], num_replicas=3))
                body = b"x" * 600
                for start in range(0, n, 500):
                    await asyncio.gather(
                        *(js.publish(f"bench.acks.{i % 7}", body) for i in range(start, min(n, start + 500)))
                    )
                runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
                for r in range(rounds):
                    for mode in MODES:
                        runs[mode].append(await drain(nc, f"{mode}-{r}", mode, n, batch, cpu, names))
                        print(f"round {r + 1} {mode}: {runs[mode][-1]}", flush=True)
            finally:
                await nc.drain()
        finally:
            for server in servers:
                server.stop()
    medians = {
        mode: {key: round(statistics.median(run[key] for run in rs), 1) for key in rs[0]} for mode, rs in runs.items()
    }
    reference = medians["none"]["server_cpu_us_per_msg"]
    for m in medians.values():
        m["server_cpu_us_over_none"] = round(m["server_cpu_us_per_msg"] - reference, 1)
        m["rate_vs_none"] = round(m["msgs_per_s"] / medians["none"]["msgs_per_s"], 3)
    return {"benchmark": "cluster_acks", "messages": n, "batch": batch, "rounds": rounds, "modes": medians, **machine()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=512, help="messages per fetch (ingest's batch size)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    result = asyncio.run(measure(args.messages, args.batch, args.rounds))
    for mode, m in result["modes"].items():
        print(
            f"{mode}: {m['msgs_per_s']:,.0f} msgs/s ({m['rate_vs_none']:.2f} of none), servers"
            f" {m['server_cpu_us_per_msg']} CPU-us per message ({m['server_cpu_us_over_none']:+} over none)"
        )
    print_result(result)


if __name__ == "__main__":
    main()
