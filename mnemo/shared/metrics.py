"""Every Prometheus metric mnemo exports, defined once: name, type, help, labels (the catalog).

Each ``_counter``/``_gauge``/``_histogram`` call below adds one :class:`MetricSpec` to :data:`CATALOG` and
returns the prometheus-client object the code updates; :data:`EXTERNAL` lists the series others define in
the same registry (FastStream's ``NatsPrometheusMiddleware`` broker counters, prefix ``mnemo_broker``, and
prometheus-client's process collector). ``docs/operations.md`` carries the table :func:`catalog_markdown`
renders (a test keeps it current); dashboards and alert rules are checked against these names.

Labels are bounded: a service, durable, stream, subject, reason *category*, section, partition, provider,
model. Never a tenant, user, conversation or message id: per-tenant usage is a report (``mnemo status
--usage``). Hot paths bind label children once (``HANDLED.labels(service=...)``) and call ``inc``/``observe``
on them: a fraction of a microsecond, no dict built per message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, PlatformCollector, ProcessCollector

Kind = Literal["counter", "gauge", "histogram"]

# Counters without their ``_created`` twin series: they double the exposition and nothing reads them.
prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

#: The one registry of a process (``make run`` hosts every service in one: the ``service`` label tells them apart).
REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)


@dataclass(frozen=True)
class MetricSpec:
    name: str  # as exposed: counters end in ``_total``
    kind: Kind
    help: str
    labels: tuple[str, ...] = ()
    source: str = "mnemo"  # who defines it: mnemo, FastStream (broker middleware) or prometheus-client


CATALOG: list[MetricSpec] = []

SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
TOKENS = (16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)


def _counter(name: str, help: str, *labels: str) -> Counter:
    CATALOG.append(MetricSpec(name, "counter", help, labels))
    return Counter(name.removesuffix("_total"), help, labels, registry=REGISTRY)


def _gauge(name: str, help: str, *labels: str) -> Gauge:
    CATALOG.append(MetricSpec(name, "gauge", help, labels))
    return Gauge(name, help, labels, registry=REGISTRY)


def _histogram(name: str, help: str, buckets: tuple[float, ...], *labels: str) -> Histogram:
    CATALOG.append(MetricSpec(name, "histogram", help, labels))
    return Histogram(name, help, labels, registry=REGISTRY, buckets=buckets)


# --- the process ----------------------------------------------------------------------------------------
BUILD_INFO = _gauge("mnemo_build_info", "always 1: the mnemo version this process runs", "version", "service")

# --- JetStream durables (read from the server at each scrape: what KEDA's nats-jetstream scaler reads) ---------
CONSUMER_PENDING = _gauge(
    "mnemo_consumer_pending_messages",
    "messages of the stream the durable has not been delivered yet (num_pending)",
    "stream",
    "durable",
)
CONSUMER_ACK_PENDING = _gauge(
    "mnemo_consumer_ack_pending_messages",
    "messages delivered to the durable and not acknowledged yet (num_ack_pending)",
    "stream",
    "durable",
)
CONSUMER_REDELIVERED = _gauge(
    "mnemo_consumer_redelivered_messages",
    "messages of the durable delivered more than once and not acknowledged yet (num_redelivered)",
    "stream",
    "durable",
)

# --- batch consumers (mnemo/shared/delivery) ---------------------------------------------------------------
HANDLED = _counter("mnemo_messages_handled_total", "messages processed and acknowledged", "service")
FAILED = _counter(
    "mnemo_messages_failed_total", "messages whose handling failed and were handed back for a retry", "service"
)
REDELIVERED = _counter(
    "mnemo_messages_redelivered_total", "messages received again (a delivery after the first)", "service"
)
DEAD_LETTERED = _counter(
    "mnemo_messages_dead_lettered_total",
    "messages sent to the dead-letter subject, by reason category (dead_letters.REASON_CATEGORIES)",
    "service",
    "reason",
)
HANDLER_SECONDS = _histogram(
    "mnemo_handler_duration_seconds", "a batch's time in the service's handler (every stage)", SECONDS, "service"
)
BATCH_SECONDS = _histogram(
    "mnemo_batch_duration_seconds", "a batch from its fetch to its last acknowledgement", SECONDS, "service"
)
BATCH_SIZE = _histogram("mnemo_batch_size_messages", "messages per fetched batch", SIZES, "service")

# --- the event log (mnemo/shared/eventlog) -------------------------------------------------------------
APPENDS = _counter("mnemo_eventlog_appends_total", "appends to one event stream that held (optimistic concurrency)")
APPENDED_EVENTS = _counter("mnemo_eventlog_appended_events_total", "events written to the log (duplicates not counted)")
APPEND_CONFLICTS = _counter(
    "mnemo_eventlog_append_conflicts_total", "appends that lost their race to another writer of the same stream"
)

# --- request-reply (mnemo/shared/rpc, the context-assembler) ---------------------------------------------
RPC_REQUESTS = _counter("mnemo_rpc_requests_total", "requests answered, per subject", "subject")
RPC_ERRORS = _counter("mnemo_rpc_errors_total", "ErrorReply answers, per subject and error code", "subject", "code")
RPC_SECONDS = _histogram(
    "mnemo_rpc_duration_seconds", "from a request's arrival to its reply, per subject", SECONDS, "subject"
)

# --- context assembly ----------------------------------------------------------------------------------
CONTEXT_TOKENS = _histogram("mnemo_context_tokens", "an assembled context's token_count", TOKENS)
CONTEXT_SECTION_TOKENS = _histogram(
    "mnemo_context_section_tokens", "tokens of one section of an assembled context", TOKENS, "section"
)
CONTEXT_DEGRADED = _counter(
    "mnemo_context_degraded_total",
    "parts named in a context's degraded list, by name (lore:<uid> and knowledge:<id> count as lore, knowledge)",
    "part",
)

# --- embedding --------------------------------------------------------------------------------------------
EMBEDDED_TEXTS = _counter("mnemo_embedding_texts_total", "texts embedded by the model", "provider")
EMBEDDING_SECONDS = _histogram(
    "mnemo_embedding_model_duration_seconds", "one call of the embedding model (a batch of texts)", SECONDS, "provider"
)

# --- ingest -----------------------------------------------------------------------------------------------
INGEST_MESSAGES = _counter(
    "mnemo_ingest_messages_total",
    "chat events ingest recorded or refused, per partition of the chat stream",
    "partition",
)

# --- providers over HTTP (read from their replies) ---------------------------------------------------------------
LLM_CALLS = _counter(
    "mnemo_llm_calls_total", "chat-completion requests to the LLM provider, by outcome (ok, error)", "model", "outcome"
)
LLM_TOKENS = _counter(
    "mnemo_llm_tokens_total", "tokens the LLM provider reported (usage), by type (prompt, completion)", "model", "type"
)
EMBEDDING_PROVIDER_CALLS = _counter(
    "mnemo_embedding_provider_calls_total",
    "requests to an HTTP embedding provider, by outcome (ok, error)",
    "provider",
    "outcome",
)
EMBEDDING_PROVIDER_TOKENS = _counter(
    "mnemo_embedding_provider_tokens_total", "input tokens an HTTP embedding provider reported", "provider"
)

# --- the HTTP gateway --------------------------------------------------------------------------------------------
GATEWAY_REQUESTS = _counter(
    "mnemo_gateway_requests_total", "HTTP requests to the gateway's /v1 routes, by route and status", "route", "status"
)
GATEWAY_SECONDS = _histogram(
    "mnemo_gateway_request_duration_seconds", "an HTTP request to a /v1 route, to its response", SECONDS, "route"
)

# --- defined elsewhere in the same registry ------------------------------------------------------------------
BROKER_PREFIX = "mnemo_broker"
_BROKER = ("app_name", "broker", "handler", "service")
_PUBLISH = ("app_name", "broker", "destination", "service")
_FS, _PC = "FastStream", "prometheus-client"
EXTERNAL: tuple[MetricSpec, ...] = (
    MetricSpec(f"{BROKER_PREFIX}_received_messages_total", "counter", "messages received, per subject", _BROKER, _FS),
    MetricSpec(f"{BROKER_PREFIX}_received_messages_size_bytes", "histogram", "received bodies' size", _BROKER, _FS),
    MetricSpec(f"{BROKER_PREFIX}_received_messages_in_process", "gauge", "received, being handled", _BROKER, _FS),
    MetricSpec(
        f"{BROKER_PREFIX}_received_processed_messages_total",
        "counter",
        "handler calls done, by FastStream's status (batch consumers ack by hand: always acked there)",
        (*_BROKER[:3], "status", "service"),
        _FS,
    ),
    MetricSpec(
        f"{BROKER_PREFIX}_received_processed_messages_duration_seconds", "histogram", "handler call", _BROKER, _FS
    ),
    MetricSpec(
        f"{BROKER_PREFIX}_received_processed_messages_exceptions_total",
        "counter",
        "handler calls that raised, by exception type",
        (*_BROKER[:3], "exception_type", "service"),
        _FS,
    ),
    MetricSpec(
        f"{BROKER_PREFIX}_published_messages_total",
        "counter",
        "messages published through the broker (dead letters), by status",
        (*_PUBLISH[:3], "status", "service"),
        _FS,
    ),
    MetricSpec(f"{BROKER_PREFIX}_published_messages_duration_seconds", "histogram", "one publish", _PUBLISH, _FS),
    MetricSpec(
        f"{BROKER_PREFIX}_published_messages_exceptions_total",
        "counter",
        "publishes that raised, by exception type",
        (*_PUBLISH[:3], "exception_type", "service"),
        _FS,
    ),
    MetricSpec("process_cpu_seconds_total", "counter", "CPU time of the process (user and system)", (), _PC),
    MetricSpec("process_resident_memory_bytes", "gauge", "resident memory", (), _PC),
    MetricSpec("process_virtual_memory_bytes", "gauge", "virtual memory", (), _PC),
    MetricSpec("process_open_fds", "gauge", "open file descriptors", (), _PC),
    MetricSpec("process_max_fds", "gauge", "the limit of open file descriptors", (), _PC),
    MetricSpec("process_start_time_seconds", "gauge", "when the process started (Unix time)", (), _PC),
    MetricSpec(
        "python_info", "gauge", "the Python version", ("implementation", "major", "minor", "patchlevel", "version"), _PC
    ),
)


def every_metric() -> list[MetricSpec]:
    """The whole catalog: mnemo's own metrics, then those defined by FastStream and prometheus-client."""
    return [*CATALOG, *EXTERNAL]


def catalog_markdown() -> str:
    """The metric table of ``docs/operations.md``."""
    lines = ["| metric | type | labels | meaning | defined by |", "| --- | --- | --- | --- | --- |"]
    for m in every_metric():
        labels = ", ".join(f"`{label}`" for label in m.labels) or "-"
        meaning = m.help.replace("|", "\\|")
        lines.append(f"| `{m.name}` | {m.kind} | {labels} | {meaning} | {m.source} |")
    return "\n".join(lines) + "\n"
