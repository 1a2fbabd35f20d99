"""KEDA's reading of a JetStream worker's backlog, done for real on ``mnemo cluster`` (3 NATS nodes, SecantusDB,
one ingest replica): what KEDA's nats-jetstream scaler reads (every node's ``/jsz?acc=$G&config=true&consumers=true``,
the numbers of the node that leads the consumer, ``num_pending + num_ack_pending``, mnemo/runtime/consumer_lag.py),
with ingest stopped while 2,000 messages are published: the lag reads 2,000, the replicas the autoscaler would ask
for are ``ceil(lag / lagThreshold)`` within the rendered chart's min and max, and the lag falls to 0 once ingest
runs again."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import nats
import pytest

from bench.cluster_proc import ROOT, cluster
from bench.ingest import payloads
from bench.publisher import publish_all
from mnemo.runtime import consumer_lag
from mnemo.runtime.catalog import SERVICES
from mnemo.runtime.servers import pid_alive
from mnemo.shared import subjects
from tests.chart.helm import by_kind, render

pytestmark = [pytest.mark.integration, pytest.mark.slow]

N = 2000
ONLY_INGEST = ",".join(f"{s.name}={1 if s.name == 'ingest' else 0}" for s in SERVICES)


def _entry(pids: dict[str, Any], name: str, replica: int | None = None) -> dict[str, Any]:
    return next(p for p in pids["processes"] if p["name"] == name and p.get("replica") == replica)


def _ingest_bounds() -> consumer_lag.ScalingBounds:
    """The ingest ScaledObject of the chart rendered with its default values."""
    scaled = by_kind(render(), "ScaledObject")["mnemo-ingest"]["spec"]
    (trigger,) = [t for t in scaled["triggers"] if t["type"] == "nats-jetstream"]
    assert (trigger["metadata"]["stream"], trigger["metadata"]["consumer"]) == (
        subjects.CHAT_STREAM,
        subjects.durable("ingest"),
    )
    return consumer_lag.ScalingBounds(
        min_replicas=scaled["minReplicaCount"],
        max_replicas=scaled["maxReplicaCount"],
        lag_threshold=int(trigger["metadata"]["lagThreshold"]),
        activation_lag_threshold=int(trigger["metadata"]["activationLagThreshold"]),
    )


async def _lag_when(monitors: list[str], done: Any, timeout_s: float) -> consumer_lag.ConsumerLag:
    """Read the lag until ``done(lag)`` (each read as KEDA's next poll would), or fail after ``timeout_s``: KEDA
    too reports an error and reads again at its next poll while no node leads the consumer."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            lag = await asyncio.to_thread(
                consumer_lag.read_lag, monitors, subjects.CHAT_STREAM, subjects.durable("ingest")
            )
        except consumer_lag.LagReadError:  # the durable not created yet, or its leader being elected
            if time.monotonic() > deadline:
                raise
        else:
            if done(lag) or time.monotonic() > deadline:
                return lag
        await asyncio.sleep(0.5)


async def test_the_lag_keda_reads_and_the_replicas_it_asks_for(tmp_path: Path) -> None:
    bounds = _ingest_bounds()
    async with cluster(tmp_path, ONLY_INGEST, "keda") as (nats_url, _mongodb_url, pids):
        nodes = [_entry(pids, f"nats-{i}") for i in (1, 2, 3)]
        monitors = [node["monitor"] for node in nodes]
        ingest = _entry(pids, "ingest", 1)
        data_dir = Path(ingest["log"]).parent.parent

        idle = await _lag_when(monitors, lambda lag: lag.lag == 0, 30)
        assert idle.lag == 0
        assert idle.leader in {node["name"] for node in nodes}

        os.kill(ingest["pid"], signal.SIGTERM)  # stopped: the supervisor reports it and leaves it down
        deadline = time.monotonic() + 60
        while pid_alive(ingest["pid"]) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        assert not pid_alive(ingest["pid"])

        nc = await nats.connect(nats_url)
        try:
            await publish_all(nc.jetstream(), subjects.MESSAGE_CREATED, payloads(N, conversations=40))
        finally:
            await nc.close()

        backlog = await _lag_when(monitors, lambda lag: lag.lag >= N, 30)
        assert (backlog.num_pending, backlog.num_ack_pending) == (N, 0)
        assert backlog.lag == N
        wanted = consumer_lag.desired_replicas(backlog.lag, bounds)
        assert wanted == max(bounds.min_replicas, min(bounds.max_replicas, -(-N // bounds.lag_threshold)))
        assert bounds.min_replicas <= wanted <= bounds.max_replicas
        assert wanted > bounds.min_replicas, "2,000 waiting messages must ask for more than the minimum"

        # Only the consumer's leader answers: a node that does not lead it is passed over.
        followers = [n["monitor"] for n in nodes if n["name"] != backlog.leader]
        with pytest.raises(consumer_lag.LagReadError, match="is led by"):
            consumer_lag.read_lag(followers, subjects.CHAT_STREAM, subjects.durable("ingest"))

        restart = [sys.executable, "-m", "mnemo.runtime.cli", "cluster", "restart", "ingest", "1"]
        argv = [*restart, "--data-dir", str(data_dir)]
        await asyncio.to_thread(subprocess.run, argv, cwd=ROOT, check=True, timeout=120)
        drained = await _lag_when(monitors, lambda lag: lag.lag == 0, 300)
        assert drained.lag == 0, f"ingest left {drained} after its restart"
        assert consumer_lag.desired_replicas(drained.lag, bounds) == bounds.min_replicas
