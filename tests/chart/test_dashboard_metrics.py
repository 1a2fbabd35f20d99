"""Every metric the Grafana dashboard or an alert rule names is one mnemo exports: in the metric catalog
(mnemo/shared/metrics.py, mnemo's own and the series FastStream and prometheus-client add to its registry), or
Prometheus's own ``up``. That the running processes export them is checked on ``make cluster``
(tests/integration/test_cluster_metrics.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import yaml

from mnemo.shared import metrics
from tests.chart.helm import CHART

DASHBOARD = CHART / "files" / "dashboards" / "mnemo.json"
RULES = CHART / "files" / "alerts.yaml"
#: Series Prometheus makes itself.
PROMETHEUS_OWN = {"up"}
HISTOGRAM_SERIES = ("_bucket", "_sum", "_count")
_FUNCTIONS = {"sum", "max", "min", "avg", "rate", "increase", "histogram_quantile", "by", "on", "le", "and", "or"}


def dashboard_exprs() -> Iterator[str]:
    def walk(panels: list[dict[str, Any]]) -> Iterator[str]:
        for panel in panels:
            yield from (t["expr"] for t in panel.get("targets", []))
            yield from walk(panel.get("panels", []))

    yield from walk(json.loads(DASHBOARD.read_text())["panels"])


def rule_exprs() -> Iterator[str]:
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        yield from (rule["expr"] for rule in group["rules"])


def metric_names(expr: str) -> set[str]:
    """The series names a PromQL expression selects (functions, keywords and label names left out)."""
    without_labels = re.sub(r"\{[^}]*\}", "{}", expr)
    without_ranges = re.sub(r"\[[^\]]*\]", "[]", without_labels)
    names = set(re.findall(r"\b([a-z_:][a-z0-9_:]*)\s*(?=\{|\[|\s*[)+\-*/<>=]|\s*$)", without_ranges))
    grouped = set(re.findall(r"\b(?:by|on|without)\s*\(([^)]*)\)", without_ranges))
    labels = {label.strip() for group in grouped for label in group.split(",")}
    return {n for n in names - _FUNCTIONS - labels if not n.isdigit()}


def exported_series() -> set[str]:
    names = {spec.name for spec in (*metrics.CATALOG, *metrics.EXTERNAL)}
    histograms = {spec.name for spec in (*metrics.CATALOG, *metrics.EXTERNAL) if spec.kind == "histogram"}
    return names | {h + suffix for h in histograms for suffix in HISTOGRAM_SERIES} | PROMETHEUS_OWN


def test_the_name_extraction_finds_selectors_not_functions_or_labels() -> None:
    expr = 'histogram_quantile(0.95, sum by (le, subject) (rate(mnemo_rpc_duration_seconds_bucket{code="x"}[5m]))) > 1'
    assert metric_names(expr) == {"mnemo_rpc_duration_seconds_bucket"}
    both = "max by (durable) (mnemo_consumer_pending_messages) + max by (durable) (mnemo_consumer_ack_pending_messages)"
    assert metric_names(both) == {"mnemo_consumer_pending_messages", "mnemo_consumer_ack_pending_messages"}
    assert metric_names('up{job=~".*mnemo.*"} == 0') == {"up"}


def test_every_dashboard_metric_is_in_the_catalog() -> None:
    used = {name for expr in dashboard_exprs() for name in metric_names(expr)}
    assert len(used) >= 20, used
    assert used <= exported_series(), sorted(used - exported_series())


def test_every_alert_metric_is_in_the_catalog() -> None:
    used = {name for expr in rule_exprs() for name in metric_names(expr)}
    assert used, "no metric found in the alert rules"
    assert used <= exported_series(), sorted(used - exported_series())
