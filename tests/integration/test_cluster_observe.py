"""Probes and metrics on ``mnemo cluster`` (one replica of each service, two context-assemblers), as an operator
reads them: every service process is listed in pids.json with its probe server (``http``) and answers
/healthz, /readyz and /metrics; /readyz turns unready within 15 s of SecantusDB stopping and ready again after
``mnemo cluster restart secantusd``; ``mnemo status`` reads it all into one table."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from mnemo.runtime import catalog, consumer_lag
from mnemo.shared import subjects
from mnemo.shared.settings import StreamsSettings
from tests.integration.test_cluster import ClusterProcess
from tests.waiting import http_get

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: Every service's process connects to MongoDB (its core: the log, the keys, the read models).
SERVICES = tuple(service.name for service in catalog.SERVICES)
CONSUMERS = ("ingest", "embedding", "summarizer", "memory-extractor")
UNREADY_WITHIN_S = 15.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterProcess]:
    proc = ClusterProcess(tmp_path_factory.mktemp("cluster-observe") / "data")
    proc.start()
    yield proc
    proc.stop()


def services(cluster: ClusterProcess) -> list[dict[str, Any]]:
    return [p for p in cluster.pids()["processes"] if p["kind"] == "service"]


def readiness(entry: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    status, body = http_get(f"{entry['http']}/readyz")
    return status, json.loads(body)


def wait_until(check: Any, what: str, timeout: float) -> float:
    """Seconds until ``check()`` held; fails after ``timeout``."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, f"not within {timeout:.0f} s: {what}"
        time.sleep(0.25)
    return time.monotonic() - started


def test_every_service_process_answers_its_probes(cluster: ClusterProcess):
    entries = services(cluster)
    assert sorted({e["name"] for e in entries}) == sorted(SERVICES)
    for entry in entries:
        assert entry["http"].startswith("http://127.0.0.1:"), entry
        assert http_get(f"{entry['http']}/healthz")[0] == 200
        wait_until(lambda e=entry: readiness(e)[0] == 200, f"{entry['name']} ready", 120)
        checks = readiness(entry)[1]["checks"]
        assert {"nats", "jetstream", "mongodb", "consumers"} <= set(checks), checks
        if entry["name"] == "context-assembler":
            assert checks["vectors"].startswith("ok: shard at stream sequence"), checks
        status, text = http_get(f"{entry['http']}/metrics")
        assert status == 200
        assert f'mnemo_build_info{{service="{entry["name"]}",' in text
        assert "process_cpu_seconds_total" in text


def test_consumers_report_their_durable_and_rpc_services_their_requests(cluster: ClusterProcess):
    for entry in services(cluster):
        text = http_get(f"{entry['http']}/metrics")[1]
        if entry["name"] in CONSUMERS:
            # ingest: one of its partitions' (its only replica holds them all)
            ingest = entry["name"] == "ingest"
            durable = subjects.partition_durable(16, 0) if ingest else subjects.durable(entry["name"])
            assert f'mnemo_consumer_pending_messages{{durable="{durable}",' in text, entry["name"]
            assert f'mnemo_consumer_ack_pending_messages{{durable="{durable}",' in text, entry["name"]


def test_readyz_turns_unready_when_the_database_stops_and_ready_after_it_restarts(cluster: ClusterProcess):
    entries = services(cluster)
    os.kill(cluster.entry("secantusd")["pid"], signal.SIGTERM)
    try:
        unready = _first_seen(entries, 503, UNREADY_WITHIN_S + 10)
        for entry in entries:  # each says why, and stays alive: nothing to restart for an outage it rides out
            checks = readiness(entry)[1]["checks"]
            assert checks["mongodb"].startswith("failed"), checks
            assert checks["nats"].startswith("ok"), checks
            assert http_get(f"{entry['http']}/healthz")[0] == 200
    finally:
        restart = subprocess.run(
            [*cluster.cli("restart", "secantusd")], capture_output=True, text=True, timeout=300, check=False
        )
    assert restart.returncode == 0, restart.stderr
    for label, seconds in unready.items():
        print(f"{label}: unready {seconds:.1f} s after SecantusDB stopped")
    assert len(unready) == len(entries), f"still ready: {set(map(_label, entries)) - set(unready)}"
    assert max(unready.values()) <= UNREADY_WITHIN_S, unready
    ready = _first_seen(entries, 200, 120)
    for label, seconds in ready.items():
        print(f"{label}: ready again {seconds:.1f} s after the restart")
    still = {_label(e): readiness(e)[1].get("checks") for e in entries if _label(e) not in ready}
    assert not still, f"not ready again 120 s after the restart: {still}"


def _label(entry: dict[str, Any]) -> str:
    return f"{entry['name']}-{entry['replica']}"


def _first_seen(entries: list[dict[str, Any]], status: int, within_s: float) -> dict[str, float]:
    """When each process's /readyz first answered ``status``, in seconds from now: every process asked at once,
    round after round (a probe of a process whose database is down takes its check's 2 s)."""
    started, seen = time.monotonic(), {}
    with ThreadPoolExecutor(len(entries)) as pool:
        while len(seen) < len(entries) and time.monotonic() - started < within_s:
            waiting = [e for e in entries if _label(e) not in seen]
            for entry, answered in zip(waiting, pool.map(lambda e: readiness(e)[0], waiting), strict=True):
                if answered == status:
                    seen[_label(entry)] = time.monotonic() - started
            time.sleep(0.25)
    return seen


def test_mnemo_status_reads_the_cluster(cluster: ClusterProcess):
    nats_url = cluster.entry("nats-1")["url"]
    out = subprocess.run(
        [sys.executable, "-m", "mnemo.runtime.cli", "status", "--data-dir", str(cluster.data_dir),
         "--nats-url", nats_url, "--json"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    processes = {(p["name"], p.get("replica")): p for p in report["processes"]}
    for entry in services(cluster):
        assert processes[(entry["name"], entry["replica"])]["ready"] is True, processes
    durables = {d["durable"]: d for d in report["durables"]}
    for name in CONSUMERS:  # ingest: its v1 router's durable and each partition's
        worker = next(w for w in consumer_lag.WORKERS if w.service == name)
        for durable in worker.all_durables(StreamsSettings().ingest_partitions):
            assert durables[durable]["pending"] >= 0
    assert durables[subjects.partition_durable(16, 3)]["partition"] == "3/16"
    assert {s["name"] for s in report["streams"]} >= {subjects.CHAT_STREAM, subjects.LOG_STREAM, subjects.DLQ_STREAM}
    table = subprocess.run(
        [sys.executable, "-m", "mnemo.runtime.cli", "status", "--data-dir", str(cluster.data_dir),
         "--nats-url", nats_url],
        capture_output=True, text=True, timeout=300, check=False, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert table.returncode == 0, table.stderr
    assert subjects.partition_durable(16, 15) in table.stdout
    assert "ready" in table.stdout
