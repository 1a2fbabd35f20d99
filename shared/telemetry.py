"""OpenTelemetry set-up shared by every service: one tracer provider, exporter chosen in settings.

Every broker carries FastStream's NATS telemetry middleware, which propagates the trace context in
message headers. For batch consumers that middleware starts one trace per batch, so ``shared.delivery``
also records a span per message, parented on that message's own headers; events carry it in their
``traceparent`` and the relay publishes it, so one chat message's path across ingest, the relay and the
consumers is one trace. Tests can watch the spans with ``tracer_provider(service, ...).add_span_processor``.
"""

from __future__ import annotations

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.trace import Tracer

from shared.settings import TelemetrySettings

_providers: dict[str, TracerProvider] = {}


def tracer_provider(service: str, settings: TelemetrySettings) -> TracerProvider:
    """One provider per service name (several services share a process in embedded mode)."""
    if service in _providers:
        return _providers[service]
    provider = TracerProvider(resource=Resource.create({"service.name": f"mnemo-{service}"}))
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
