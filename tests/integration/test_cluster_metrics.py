"""Every metric the Grafana dashboard or an alert rule names is exported by a running ``mnemo cluster``: each
process's ``/metrics`` (its ``"http"`` entry in pids.json) is scraped after a little traffic, and every name the
dashboard (deploy/helm/mnemo/files/dashboards/mnemo.json) and the rules (files/alerts.yaml) select is a metric
family one of them exposes (a labelled family is exposed with its HELP and TYPE before its first sample)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import nats
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bench.cluster_proc import cluster
from bench.common import wait_for_ingest
from bench.ingest import keyed_messages, payloads
from bench.publisher import publish_all
from mnemo.runtime.catalog import SERVICES
from mnemo.shared import subjects
from tests.chart.test_dashboard_metrics import (
    HISTOGRAM_SERIES,
    PROMETHEUS_OWN,
    dashboard_exprs,
    metric_names,
    rule_exprs,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ONE_EACH = ",".join(f"{s.name}=1" for s in SERVICES)


def _scrape(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url.rstrip('/')}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {family.name: family for family in text_string_to_metric_families(text)}


def _family(series: str) -> str:
    for suffix in (*HISTOGRAM_SERIES, "_total"):
        if series.endswith(suffix):
            return series.removesuffix(suffix)
    return series


async def test_every_metric_the_dashboard_and_alerts_name_is_exported(tmp_path: Path) -> None:
    async with cluster(tmp_path, ONE_EACH, "metrics") as (nats_url, _mongodb_url, pids):
        nc = await nats.connect(nats_url)
        try:
            await publish_all(nc.jetstream(), keyed_messages(payloads(50, conversations=5)))
            await wait_for_ingest(nc.jetstream(), timeout_s=120)
            request = {"tenant_id": "bench", "user_id": "user-0", "conversation_id": "conv-0", "bot_id": "bot",
                       "user_message": "the storm?", "max_tokens": 1000}  # fmt: skip
            await nc.request(subjects.CONTEXT_ASSEMBLE, json.dumps(request).encode(), timeout=30)
        finally:
            await nc.close()
        services = [p for p in pids["processes"] if p["kind"] == "service"]
        assert all(p.get("http") for p in services), f"a service has no http entry in pids.json: {services}"
        exported: dict[str, Any] = {}
        for process in services:
            exported.update(_scrape(process["http"]))
        ingest = _scrape(next(p["http"] for p in services if p["name"] == "ingest"))
    # Ingest's partitions count what they handled (every message, by partition) like any consumer.
    handled = [s.value for s in ingest["mnemo_messages_handled"].samples if s.name.endswith("_total")]
    assert handled == [50], ingest["mnemo_messages_handled"].samples
    partitions = [s for s in ingest["mnemo_ingest_messages"].samples if s.name.endswith("_total")]
    assert sum(s.value for s in partitions) == 50
    assert len({s.labels["partition"] for s in partitions if s.value}) > 1, "5 conversations in one partition?"
    # prometheus-client names a counter's family without ``_total``.
    families = set(exported) | PROMETHEUS_OWN
    used = {n for expr in (*dashboard_exprs(), *rule_exprs()) for n in metric_names(expr)}
    missing = sorted(n for n in used if _family(n) not in families and n not in families)
    assert not missing, f"named by the dashboard or the alerts, exported by no process: {missing}"
