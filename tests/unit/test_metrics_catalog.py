"""The metric catalog (mnemo/shared/metrics.py) is what the registry exports, follows Prometheus's naming, never
labels by an id, and docs/operations.md carries its current table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from prometheus_client.metrics import MetricWrapperBase

from mnemo.runtime.metrics_doc import with_metric_table
from mnemo.shared import metrics
from mnemo.shared.broker_metrics import bounded_subject, broker_metrics

ROOT = Path(__file__).resolve().parents[2]
#: Label names that would carry an id of a tenant's data (per-tenant figures come from the usage report).
FORBIDDEN = re.compile(r"tenant|user|conversation|message_id|msg_id|event_id|character|bot|persona|book|fact")


def _registered() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Exposed name -> (type, label names) of every collector in the registry."""
    broker_metrics("catalog-test")  # FastStream's series are registered by the first broker's middleware
    found: dict[str, tuple[str, tuple[str, ...]]] = {}
    for collector in set(metrics.REGISTRY._collector_to_names):
        if isinstance(collector, MetricWrapperBase):
            name = collector._name + ("_total" if collector._type == "counter" else "")
            found[name] = (collector._type, tuple(collector._labelnames))
        else:  # the process and platform collectors
            for family in collector.collect():
                suffix = "_total" if family.type == "counter" else ""
                found[family.name + suffix] = (family.type, ())
    return found


def test_every_catalogued_metric_is_registered_with_its_type_and_labels():
    registered = _registered()
    for spec in metrics.CATALOG:
        assert registered.get(spec.name) == (spec.kind, spec.labels), spec.name
    for spec in metrics.EXTERNAL:
        if spec.source == "FastStream":
            assert registered.get(spec.name) == (spec.kind, spec.labels), spec.name


def test_nothing_is_registered_outside_the_catalog():
    assert set(_registered()) - {spec.name for spec in metrics.every_metric()} == set()


def test_names_follow_prometheus_conventions():
    names = [spec.name for spec in metrics.every_metric()]
    assert len(names) == len(set(names)), "a metric is defined twice"
    for spec in metrics.CATALOG:
        assert re.fullmatch(r"mnemo_[a-z][a-z0-9_]*", spec.name), spec.name
        assert spec.name.endswith("_total") == (spec.kind == "counter"), (
            f"{spec.name}: counters, and only they, end in _total"
        )
        if spec.kind == "histogram":
            assert spec.name.endswith(("_seconds", "_tokens", "_messages")), f"{spec.name}: a histogram names its unit"
        assert spec.help, spec.name
        assert not spec.help.endswith("."), spec.name


@pytest.mark.parametrize("spec", metrics.every_metric(), ids=lambda s: s.name)
def test_no_label_carries_an_id(spec: metrics.MetricSpec):
    assert not [label for label in spec.labels if FORBIDDEN.search(label)]


def test_operations_doc_carries_the_current_metric_table():
    doc = (ROOT / "docs" / "operations.md").read_text()
    assert doc == with_metric_table(doc), "run `make docs` (mnemo metrics-doc) and commit docs/operations.md"


@pytest.mark.parametrize(
    ("subject", "label"),
    [
        ("mnemo.chat.message.created.v1", "mnemo.chat.message.created.v1"),
        ("mnemo.log.message.recorded.v1", "mnemo.log.message.recorded.v1"),
        ("mnemo.dlq.ingest.v1", "mnemo.dlq.ingest.v1"),
        ("mnemo.rpc.context.assemble.v1", "mnemo.rpc.context.assemble.v1"),
        ("mnemo.points.point.3f2a9c", "mnemo.points.>"),
        ("mnemo.chat.tenant-7.conv-9.message.created.v2", "mnemo.chat.>"),
        ("_INBOX.platform.abc", "_INBOX.platform.>"),
    ],
)
def test_broker_label_of_a_subject_holds_no_id(subject: str, label: str):
    assert bounded_subject(subject) == label
