"""KEDA's reading of a JetStream worker's backlog, done for real on ``mnemo cluster`` (3 NATS nodes, SecantusDB,
one ingest replica): what KEDA's nats-jetstream scaler reads (every node's ``/jsz?acc=$G&config=true&consumers=true``,
the numbers of the node that leads the consumer, ``num_pending + num_ack_pending``, mnemo/runtime/consumer_lag.py),
with ingest stopped while 2,000 messages of 40 conversations are published on their keyed subjects: the lags of
the partition durables (one trigger each in the chart) add up to 2,000, each partition holding exactly its
conversations' messages; the replicas the autoscaler would ask for are the largest ``ceil(lag / lagThreshold)``
over the triggers, within the rendered chart's min and max; and every lag falls to 0 once ingest runs again."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import nats
import pytest

from bench.cluster_proc import ROOT, cluster
from bench.ingest import keyed_messages, payloads
from bench.publisher import publish_all
from mnemo.runtime import consumer_lag
from mnemo.runtime.catalog import SERVICES
from mnemo.runtime.servers import pid_alive
from mnemo.shared import subjects
from mnemo.shared.partitions import partition_of
from mnemo.shared.settings import StreamsSettings
from tests.chart.helm import by_kind, render

pytestmark = [pytest.mark.integration, pytest.mark.slow]

N = 2000
ONLY_INGEST = ",".join(f"{s.name}={1 if s.name == 'ingest' else 0}" for s in SERVICES)


def _entry(pids: dict[str, Any], name: str, replica: int | None = None) -> dict[str, Any]:
    return next(p for p in pids["processes"] if p["name"] == name and p.get("replica") == replica)


def _ingest_triggers() -> tuple[consumer_lag.ScalingBounds, list[str]]:
    """The ingest ScaledObject of the chart rendered with its default values: its bounds and the durables of its
    triggers (the v1 router's, then one per partition)."""
    scaled = by_kind(render(), "ScaledObject")["mnemo-ingest"]["spec"]
    triggers = [t["metadata"] for t in scaled["triggers"] if t["type"] == "nats-jetstream"]
    assert {t["stream"] for t in triggers} == {subjects.CHAT_STREAM}
    assert len({(t["lagThreshold"], t["activationLagThreshold"]) for t in triggers}) == 1
    bounds = consumer_lag.ScalingBounds(
        min_replicas=scaled["minReplicaCount"],
        max_replicas=scaled["maxReplicaCount"],
        lag_threshold=int(triggers[0]["lagThreshold"]),
        activation_lag_threshold=int(triggers[0]["activationLagThreshold"]),
    )
    return bounds, [t["consumer"] for t in triggers]


async def _lags_when(
    monitors: list[str], durables: list[str], done: Any, timeout_s: float
) -> dict[str, consumer_lag.ConsumerLag]:
    """Read every durable's lag until ``done(lags)`` (each read as KEDA's next poll would), or fail after
    ``timeout_s``: KEDA too reports an error and reads again at its next poll while no node leads a consumer."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            lags = {
                d: await asyncio.to_thread(consumer_lag.read_lag, monitors, subjects.CHAT_STREAM, d) for d in durables
            }
        except consumer_lag.LagReadError:  # a durable not created yet, or its leader being elected
            if time.monotonic() > deadline:
                raise
        else:
            if done(lags) or time.monotonic() > deadline:
                return lags
        await asyncio.sleep(0.5)


def _total(lags: dict[str, consumer_lag.ConsumerLag]) -> int:
    return sum(lag.lag for lag in lags.values())


async def test_the_lag_keda_reads_and_the_replicas_it_asks_for(tmp_path: Path) -> None:
    bounds, durables = _ingest_triggers()
    count = StreamsSettings().ingest_partitions
    assert durables == [subjects.INGEST_V1_DURABLE, *(subjects.partition_durable(count, k) for k in range(count))]
    async with cluster(tmp_path, ONLY_INGEST, "keda") as (nats_url, _mongodb_url, pids):
        nodes = [_entry(pids, f"nats-{i}") for i in (1, 2, 3)]
        monitors = [node["monitor"] for node in nodes]
        ingest = _entry(pids, "ingest", 1)
        data_dir = Path(ingest["log"]).parent.parent

        idle = await _lags_when(monitors, durables, lambda lags: _total(lags) == 0, 60)
        assert _total(idle) == 0
        assert {lag.leader for lag in idle.values()} <= {node["name"] for node in nodes}

        os.kill(ingest["pid"], signal.SIGTERM)  # stopped: the supervisor reports it and leaves it down
        deadline = time.monotonic() + 60
        while pid_alive(ingest["pid"]) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        assert not pid_alive(ingest["pid"])

        messages = keyed_messages(payloads(N, conversations=40))
        nc = await nats.connect(nats_url)
        try:
            await publish_all(nc.jetstream(), messages)
        finally:
            await nc.close()

        backlog = await _lags_when(monitors, durables, lambda lags: _total(lags) >= N, 30)
        assert _total(backlog) == N
        assert all(lag.num_ack_pending == 0 for lag in backlog.values())
        expected = Counter(
            subjects.partition_durable(count, partition_of(*subject.split(".")[-2:], count)) for subject, _ in messages
        )
        assert {d: lag.lag for d, lag in backlog.items() if lag.lag} == dict(expected)
        # The HPA asks for the largest of its triggers' counts.
        wanted = max(consumer_lag.desired_replicas(lag.lag, bounds) for lag in backlog.values())
        busiest = max(expected.values())
        assert wanted == max(bounds.min_replicas, min(bounds.max_replicas, -(-busiest // bounds.lag_threshold)))
        assert bounds.min_replicas <= wanted <= bounds.max_replicas
        assert wanted > bounds.min_replicas, "2,000 waiting messages must ask for more than the minimum"

        # Only the consumer's leader answers: a node that does not lead it is passed over.
        durable, lag = next(iter(backlog.items()))
        followers = [n["monitor"] for n in nodes if n["name"] != lag.leader]
        with pytest.raises(consumer_lag.LagReadError, match="is led by"):
            consumer_lag.read_lag(followers, subjects.CHAT_STREAM, durable)

        restart = [sys.executable, "-m", "mnemo.runtime.cli", "cluster", "restart", "ingest", "1"]
        argv = [*restart, "--data-dir", str(data_dir)]
        await asyncio.to_thread(subprocess.run, argv, cwd=ROOT, check=True, timeout=120)
        drained = await _lags_when(monitors, durables, lambda lags: _total(lags) == 0, 300)
        assert _total(drained) == 0, f"ingest left {drained} after its restart"
        assert max(consumer_lag.desired_replicas(lag.lag, bounds) for lag in drained.values()) == bounds.min_replicas
