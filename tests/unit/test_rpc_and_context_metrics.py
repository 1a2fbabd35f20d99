"""Request and context metrics: per subject the requests, errors by code and latency; per context the tokens,
each section's and the degraded parts by name (never an id)."""

from __future__ import annotations

import time

from mnemo.services.context_assembler.metering import MAX_NAMES, ContextMeter
from mnemo.shared.metrics import REGISTRY
from mnemo.shared.rpc import RpcMeter, error
from mnemo_client.wire.contract import ContextAssembleReply, Section


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_rpc_meter_counts_requests_errors_by_code_and_latency():
    subject = "mnemo.rpc.test.meter.v1"
    meter = RpcMeter(subject)
    meter.answered(time.perf_counter(), object())
    meter.answered(time.perf_counter(), error("not_found", "no such book"))
    meter.answered(time.perf_counter(), error("not_found", "no such entry"))
    assert value("mnemo_rpc_requests_total", subject=subject) == 3
    assert value("mnemo_rpc_errors_total", subject=subject, code="not_found") == 2
    assert value("mnemo_rpc_duration_seconds_count", subject=subject) == 3


def reply(sections: dict[str, int], degraded: list[str]) -> ContextAssembleReply:
    return ContextAssembleReply(
        context="...",
        sections=[Section(name=n, text="...", tokens=t) for n, t in sections.items()],
        sources=[],
        token_count=sum(sections.values()),
        degraded=degraded,
    )


def test_context_meter_counts_tokens_per_section_and_degraded_parts_without_ids():
    before = {n: value("mnemo_context_section_tokens_sum", section=n) for n in ("history", "lore")}
    lore = value("mnemo_context_degraded_total", part="lore")
    meter = ContextMeter()
    meter.observe(reply({"history": 300, "lore": 120}, ["lore:1234", "lore:99", "vector_index"]))
    meter.observe(object())  # an ErrorReply: nothing to count
    assert value("mnemo_context_section_tokens_sum", section="history") - before["history"] == 300
    assert value("mnemo_context_section_tokens_sum", section="lore") - before["lore"] == 120
    assert value("mnemo_context_degraded_total", part="lore") - lore == 2
    assert value("mnemo_context_degraded_total", part="lore:1234") == 0


def test_context_meter_keeps_its_label_set_bounded():
    meter = ContextMeter()
    meter.observe(reply({}, [f"part{i}" for i in range(MAX_NAMES + 10)]))
    assert value("mnemo_context_degraded_total", part=f"part{MAX_NAMES + 5}") == 0
    assert value("mnemo_context_degraded_total", part="other") >= 10
