"""Spans are recorded only when something processes them; trace ids propagate either way."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.propagate import extract
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mnemo.shared.settings import TelemetrySettings
from mnemo.shared.telemetry import shutdown_all, tracer, tracer_provider

PLATFORM_TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
TRACEPARENT = f"00-{PLATFORM_TRACE_ID:032x}-00f067aa0ba902b7-01"


@pytest.fixture(autouse=True)
def fresh_providers() -> Iterator[None]:
    shutdown_all()
    yield
    shutdown_all()


def test_without_a_processor_spans_are_not_recorded_but_keep_the_platforms_trace() -> None:
    span = tracer("sampling-test", TelemetrySettings()).start_span(
        "work", context=extract({"traceparent": TRACEPARENT})
    )
    assert not span.is_recording()
    assert span.get_span_context().trace_id == PLATFORM_TRACE_ID
    assert span.get_span_context().span_id != 0x00F067AA0BA902B7  # a span of its own, child of the platform's


def test_once_a_processor_is_attached_spans_are_recorded_and_exported() -> None:
    exporter = InMemorySpanExporter()
    tracer_provider("sampling-test", TelemetrySettings()).add_span_processor(SimpleSpanProcessor(exporter))
    span = tracer("sampling-test", TelemetrySettings()).start_span(
        "work", context=extract({"traceparent": TRACEPARENT})
    )
    assert span.is_recording()
    span.end()
    [finished] = exporter.get_finished_spans()
    assert finished.context is not None
    assert finished.context.trace_id == PLATFORM_TRACE_ID
    assert finished.parent is not None
    assert finished.parent.span_id == 0x00F067AA0BA902B7


def test_a_configured_exporter_turns_recording_on() -> None:
    span = tracer("sampling-console", TelemetrySettings(exporter="console")).start_span("work")
    assert span.is_recording()
    span.end()
