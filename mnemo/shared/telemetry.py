"""OpenTelemetry set-up shared by every service: one tracer provider, exporter chosen in settings.

Every broker carries FastStream's NATS telemetry middleware, which propagates the trace context in
message headers. For batch consumers that middleware starts one trace per batch, so ``mnemo.shared.delivery``
also records a span per message, parented on that message's own headers; events carry it in their
``traceparent`` and the relay publishes it, so one chat message's path across ingest, the relay and the
consumers is one trace. Tests can watch the spans with ``tracer_provider(service, ...).add_span_processor``.

A provider with no span processor (the default: no exporter) records nothing: its sampler drops every span,
so a span costs a context with fresh ids instead of a recorded span with attributes that nobody reads
(about a tenth of ingest's CPU, measured with py-spy during ``make bench-ingest``). Trace ids still
propagate, so an exporter switched on in any one service sees the whole path from there on.
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.sdk.trace.sampling import DEFAULT_ON, Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind, Tracer
from opentelemetry.trace.span import TraceState
from opentelemetry.util.types import Attributes

from mnemo.shared.settings import TelemetrySettings

_providers: dict[str, TracerProvider] = {}


class _WhenObserved(Sampler):
    """Drops every span until a span processor is attached, then samples as the SDK default does."""

    def __init__(self) -> None:
        self.observed = False

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        if not self.observed:
            return SamplingResult(Decision.DROP)
        return DEFAULT_ON.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)

    def get_description(self) -> str:
        return "WhenObserved"


class _Provider(TracerProvider):
    """A tracer provider whose spans are recorded only once something (an exporter, a test) processes them."""

    def __init__(self, resource: Resource) -> None:
        self._sampler_switch = _WhenObserved()
        super().__init__(resource=resource, sampler=self._sampler_switch)

    def add_span_processor(self, span_processor: SpanProcessor) -> None:
        super().add_span_processor(span_processor)
        self._sampler_switch.observed = True


def tracer_provider(service: str, settings: TelemetrySettings) -> TracerProvider:
    """One provider per service name (several services share a process in embedded mode)."""
    if service in _providers:
        return _providers[service]
    provider = _Provider(Resource.create({"service.name": f"mnemo-{service}"}))
    exporter: SpanExporter | None = None
    if settings.exporter == "console":
        exporter = ConsoleSpanExporter()
    elif settings.exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=settings.otlp_endpoint)
    if exporter is not None:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    _providers[service] = provider
    return provider


def tracer(service: str, settings: TelemetrySettings) -> Tracer:
    """The tracer a service's own code records spans with (e.g. the per-message spans of its consumers)."""
    return tracer_provider(service, settings).get_tracer("mnemo")


def shutdown_all() -> None:
    for provider in _providers.values():
        provider.shutdown()
    _providers.clear()
