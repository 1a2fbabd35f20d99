"""One settings tree for every service, read from the environment once at start and passed down.

Variables use the prefix ``MNEMO_`` and ``__`` between nested groups, e.g. ``MNEMO_EMBEDDER__BASE_URL``
(pydantic-settings applies only the top-level config, so groups are plain models, see its issue #279).
:class:`Settings` holds what the infrastructure needs; each service owns its section of the tree in its
``settings.py`` (a plain model, e.g. ``MNEMO_SUMMARIZER__EVERY``), read with :func:`read_section`, so
shared code never imports a service. ``docs/settings.md`` lists every variable (``mnemo settings-doc``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SecretStr, create_model, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class EmbedderSettings(BaseModel):
    """Which embedding model turns text into vectors."""

    provider: Literal["bundled", "bundled-multilingual", "openai", "tei", "ollama"] = Field(
        "bundled",
        description="`bundled` runs all-MiniLM-L6-v2 int8 (English) on onnxruntime in-process; "
        "`bundled-multilingual` runs USE multilingual v3 (512-d, 16 languages) in-process; `openai` any "
        "OpenAI-compatible /embeddings endpoint; `tei` text-embeddings-inference's /embed; `ollama` Ollama's "
        "/api/embed (the HTTP ones need `base_url`)",
    )
    base_url: str | None = Field(
        None,
        description="the HTTP provider's endpoint: http://host:8000/v1 (openai), http://host:8080 (tei), "
        "http://host:11434 (ollama)",
    )
    api_key: SecretStr | None = Field(None, description="the HTTP provider's key (sent as a Bearer token)")
    model: str = Field(
        "text-embedding-3-small", description="model name sent to the HTTP provider (e.g. bge-m3 for ollama)"
    )
    dimensions: int = Field(384, description="vector size; must match the model (bundled-multilingual: 512 unless set)")
    batch_size: int = Field(32, ge=1, le=2048, description="texts per request to an HTTP embedding provider")
    spin_threads: bool = Field(
        False,
        description="bundled model: let onnxruntime's threads busy-wait between batches (3-5% faster alone, "
        "but they then burn the cores the pipeline and the other services need)",
    )
    timeout_s: float = Field(30.0, description="an HTTP embedding request's deadline")

    @model_validator(mode="after")
    def _multilingual_dimensions(self) -> EmbedderSettings:
        # The bundled models' sizes are known: only the multilingual one differs from the default.
        if self.provider == "bundled-multilingual" and "dimensions" not in self.model_fields_set:
            self.dimensions = 512
        return self


class LLMSettings(BaseModel):
    """Chat-completion provider; without a base URL the services use their no-LLM fallbacks."""

    base_url: str | None = Field(
        None, description="OpenAI-compatible chat completions endpoint, e.g. http://host:8000/v1"
    )
    api_key: SecretStr | None = Field(None, description="the endpoint's key")
    model: str = Field("gpt-4o-mini", description="model name sent to the endpoint")
    timeout_s: float = Field(60.0, description="one completion's deadline")
    max_retries: int = Field(3, description="retries of a failed or invalid completion before the no-LLM fallback")


class DeliverySettings(BaseModel):
    """How JetStream consumers treat failures."""

    max_deliver: int = Field(5, description="tries before a message goes to the dead-letter subject")
    ack_wait_s: float = Field(30.0, description="JetStream redelivers after this without an ack or progress")
    batch_size: int = Field(256, ge=1, description="messages fetched per pull")
    ingest_batch_size: int = Field(
        1024,
        ge=1,
        description="messages ingest fetches per pull: its per-batch costs (one lookup, one log insert, one "
        "state write per conversation) spread over more messages (make bench-ingest: +15-25 % msgs/s and "
        "-20 % SecantusDB CPU per message over 256; 2,048 gained nothing more)",
    )
    embedding_batch_size: int = Field(
        1024,
        ge=1,
        description="messages the embedding service fetches per pull: the more texts it sorts by length at "
        "once, the less padding the model computes (make bench-embedding: +10-15 % texts/s over 256)",
    )
    pipeline_depth: int = Field(
        2,
        ge=1,
        description="batches a staged consumer (ingest, embedding) holds at once, overlapping their stages",
    )
    lease_ttl_s: float = Field(
        10.0,
        gt=0,
        description="an ingest partition's lease (one replica consumes a partition at a time): another live "
        "replica takes the partition over this long after its holder stopped refreshing the lease",
    )


_DAY_S = 86_400.0


class StreamLimits(BaseModel):
    """One stream's retention and size limits: applied when mnemo creates the stream, and to a limit the
    stream does not have yet; a limit already on the server (an operator's) is kept, the difference logged."""

    max_age_s: float = Field(0.0, ge=0, description="messages older than this are removed (0: kept forever)")
    max_bytes: int = Field(-1, ge=-1, description="the stream's size cap; the oldest messages go first (-1: none)")
    max_msgs: int = Field(-1, ge=-1, description="the stream's message count cap (-1: none)")


class StreamsSettings(BaseModel):
    """How mnemo's JetStream streams are declared (``mnemo/shared/streams.py``)."""

    replicas: int = Field(
        1,
        ge=1,
        le=5,
        description="copies of each stream in a NATS cluster (3 in `make cluster` and compose; 1 on one server); "
        "like the limits, applied at creation only",
    )
    chat: StreamLimits = Field(
        StreamLimits(max_age_s=7 * _DAY_S),
        description="MNEMO_CHAT (the platform's events): ingest records each in the log within seconds, so a "
        "week covers a long ingest outage",
    )
    log: StreamLimits = Field(
        StreamLimits(max_age_s=7 * _DAY_S),
        description="MNEMO_LOG (recorded events relayed for the consumers): the event log in MongoDB stays the "
        "source of truth (`mnemo replay`), so a week covers a consumer's outage",
    )
    dlq: StreamLimits = Field(
        StreamLimits(max_age_s=30 * _DAY_S), description="MNEMO_DLQ (dead letters): a month to inspect them"
    )
    points: StreamLimits = Field(
        StreamLimits(),
        description="MNEMO_POINTS (stream-mode vectors, one message per point): no age limit, a new replica "
        "rebuilds its shard from it",
    )
    ingest_partitions: int = Field(
        16,
        ge=1,
        le=1024,
        description="partitions of the chat stream (docs/scaling.md): NATS maps each conversation's events "
        "to one of them and each is consumed by one ingest replica at a time, so ingest scales to this many "
        "replicas. Applied at creation only; on a running deployment: `mnemo ingest-partitions --set N`",
    )
    uploads_max_bytes: int = Field(
        10 * 1024**3, ge=1024**2, description="the MNEMO_UPLOADS object store bucket's total size limit"
    )
    upload_max_object_bytes: int = Field(
        100 * 1024**2,
        ge=1024,
        description="the largest document a client may upload (a larger import ends `failed`, its object deleted)",
    )


class NatsSettings(BaseModel):
    """How a process authenticates to NATS and secures its connection (docs/security.md, "Running secured"); every
    connection mnemo makes goes through ``mnemo.shared.natsconn``."""

    user: str | None = Field(
        None,
        description="the NATS user to connect as; unset: the process's service name (the embedded stack: each "
        "service's own) when a password or password_dir is set, else no authentication",
    )
    password: SecretStr | None = Field(None, description="the user's password")
    password_dir: Path | None = Field(
        None,
        description="a directory of `<user>.password` files (`mnemo nats-config --passwords DIR` writes them): "
        "a process reads its own user's, so one setting serves every service",
    )
    tls_ca_file: Path | None = Field(None, description="PEM CA bundle to verify the server's certificate (TLS on)")
    tls_cert_file: Path | None = Field(None, description="PEM client certificate, when the server verifies clients")
    tls_key_file: Path | None = Field(None, description="the client certificate's PEM private key")
    websocket_port: int = Field(
        0,
        ge=0,
        le=65535,
        description="the embedded nats-server (`mnemo run`) also listens for NATS over WebSocket on this port, "
        "for clients in browsers and edge runtimes (the JavaScript client's `connectWs`); 0: no WebSocket "
        "listener. Plain `ws://` unless the stack runs `--secure` (then `wss://` with the server's certificate)",
    )
    monitor_port: int = Field(
        8222,
        ge=0,
        le=65535,
        description="the embedded nats-server (`mnemo run`) serves its HTTP monitoring endpoints (`/varz`, "
        "`/jsz?consumers=true&config=true`: every durable with its filter, pending and acks) on this port of the "
        "NATS host; 0: none",
    )


class VectorsSettings(BaseModel):
    """How the vector index is shared when there is no Qdrant server (``qdrant_url`` set: the server, always)."""

    mode: Literal["local", "stream"] = Field(
        "local",
        description="`local`: one in-process Qdrant Edge shard under data_dir, so the embedding service and the "
        "context-assembler share a process (the one-process stack); `stream`: the embedding service publishes "
        "points to the MNEMO_POINTS stream and each context-assembler replica follows it into its own shard "
        "(separate processes, each with its own data_dir)",
    )
    read_wait_ms: int = Field(
        200,
        ge=0,
        description="stream mode: how long a context request waits for its replica's shard to reach the "
        "points stream's last sequence before searching anyway (then `vector_index_lag` is in degraded)",
    )
    start_catch_up_s: float = Field(
        300.0,
        ge=0,
        description="stream mode: how long a starting context-assembler replica waits for its shard to catch up "
        "with the points stream before it takes requests (then it starts anyway, logging how far behind it is)",
    )
    publish_timeout_s: float = Field(
        10.0, gt=0, description="stream mode: how long the embedding service waits for a batch's PubAcks"
    )
    search_threads: int = Field(
        1,
        ge=1,
        le=256,
        description="Qdrant Edge: threads in each shard's search pool, which reads a shard's segments in "
        "parallel. One is fastest for a shard of a few segments on a small machine (measured in "
        "mnemo/shared/vectors/edge.py); more can pay on a large shard with many segments and idle cores",
    )


class TenantLimits(BaseModel):
    """What one tenant may send; every refusal has its own error code (see ``mnemo/shared/limits.py``)."""

    model_config = ConfigDict(frozen=True)

    max_message_bytes: int = Field(
        1_048_576,
        ge=1,
        description="a chat event's size on the wire; a larger one is dead-lettered (`message_too_large`)",
    )
    max_book_entries: int = Field(
        10_000, ge=1, description="entries of one lorebook (import, entry.create: `book_too_large`)"
    )
    max_book_bytes: int = Field(
        16_000_000,
        ge=1,
        description="one lorebook's normalised JSON size, entries included (import, entry writes: `book_too_large`)",
    )
    max_books_per_bot: int = Field(
        100, ge=1, description="live books attached to one bot (attach, import, book.create: `too_many_books`)"
    )
    rpc_per_second: float = Field(
        200.0,
        ge=0,
        description="requests per second on each service's `mnemo.rpc.*` subjects (`rate_limited`); 0: no limit. "
        "A token bucket per tenant in each replica's process, so N replicas admit up to N times this",
    )
    rpc_burst: int = Field(400, ge=1, description="requests a tenant may send at once above `rpc_per_second`")


class LimitsSettings(TenantLimits):
    """``MNEMO_LIMITS__<KEY>``: the limits every tenant gets, and per-tenant exceptions in ``tenants``."""

    tenants: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description='per-tenant overrides, JSON: `{"big-platform": {"rpc_per_second": 2000}}`',
    )

    @field_validator("tenants")
    @classmethod
    def _known_limits(cls, tenants: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        for tenant, override in tenants.items():
            unknown = set(override) - set(TenantLimits.model_fields)
            if unknown:
                raise ValueError(f"tenant {tenant!r}: unknown limits {sorted(unknown)}")
            base = TenantLimits().model_dump()
            TenantLimits.model_validate({**base, **override})  # each value within its field's bounds
        return tenants

    def for_tenant(self, tenant_id: str) -> TenantLimits:
        """The limits of ``tenant_id``: the defaults with its overrides applied."""
        override = self.tenants.get(tenant_id)
        base = {name: getattr(self, name) for name in TenantLimits.model_fields}
        return TenantLimits.model_validate({**base, **override}) if override else TenantLimits.model_validate(base)

    @property
    def largest_message_bytes(self) -> int:
        """The largest message any tenant may send: refused before it is parsed to find its tenant."""
        overrides = [int(o["max_message_bytes"]) for o in self.tenants.values() if "max_message_bytes" in o]
        return max([self.max_message_bytes, *overrides])


class ObserveSettings(BaseModel):
    """Probes, metrics and logs of a process (``docs/operations.md``)."""

    http_host: str = Field(
        "127.0.0.1",
        description="address of the process's probe server (/healthz, /readyz, /metrics); the container image "
        "sets 0.0.0.0, so that Kubernetes and Prometheus reach it",
    )
    http_port: int = Field(
        9464,
        ge=0,
        le=65535,
        description="its port (0: any free port)",
    )
    log_format: Literal["text", "json"] = Field(
        "text",
        description="`json`: one JSON object a line with service, replica, trace_id and span_id (for a log "
        "pipeline); `text`: plain lines for a terminal",
    )
    replica: str | None = Field(
        None, description="the replica name in JSON logs (unset: the host name, a Kubernetes pod's name)"
    )


class TelemetrySettings(BaseModel):
    exporter: Literal["none", "console", "otlp"] = Field("none", description="where spans go; none records none")
    otlp_endpoint: str = Field("http://localhost:4318/v1/traces", description="OTLP/HTTP traces endpoint")


_TREE = SettingsConfigDict(env_prefix="MNEMO_", env_nested_delimiter="__", extra="ignore")
Section = TypeVar("Section", bound=BaseModel)


class _Tree(BaseSettings):
    model_config = _TREE


class Settings(_Tree):
    nats_url: str = Field(
        "nats://127.0.0.1:4222",
        description="the NATS server (JetStream) every service connects to; a cluster's nodes as a "
        "comma-separated list (the client picks one and fails over to the others)",
    )
    mongodb_url: str = Field(
        "mongodb://127.0.0.1:27017/?directConnection=true",
        description="the event log and read models; journaled writes are requested per operation",
    )
    mongodb_db: str = Field("mnemo", description="database holding the log, the keys and the read models")
    qdrant_url: str | None = Field(None, description="a Qdrant server; unset selects in-process Qdrant Edge")
    qdrant_api_key: SecretStr | None = Field(None, description="the Qdrant server's API key")
    data_dir: Path = Field(Path(".data"), description="embedded mode: servers' data, Qdrant Edge, keys")
    kek: SecretStr | None = Field(
        None, description="base64 32-byte key-encryption key; embedded mode generates one in data_dir"
    )
    kek_file: Path | None = Field(None, description="a file holding the base64 KEK (when `kek` is unset)")
    kek_previous: SecretStr | None = Field(
        None,
        description="comma-separated base64 KEKs being retired: still accepted for unwrapping data keys until "
        "`mnemo keys rotate-kek` re-wrapped them all under `kek` (docs/privacy.md)",
    )
    key_cache_seconds: float = Field(
        30.0,
        gt=0,
        description="how long a process keeps a data key in memory before checking the key store again: "
        "the longest another process can still use a key erased elsewhere",
    )
    vector_collection: str = Field("mnemo", description="the Qdrant collection (one for every tenant, filtered)")
    start_timeout_seconds: float = Field(
        120.0,
        gt=0,
        description="how long a service process keeps retrying its start when NATS, JetStream or MongoDB do not "
        "answer yet (a cluster still electing leaders, a loaded node) before it exits with the error",
    )
    embedder: EmbedderSettings = EmbedderSettings()
    llm: LLMSettings = LLMSettings()
    delivery: DeliverySettings = DeliverySettings()
    telemetry: TelemetrySettings = TelemetrySettings()
    observe: ObserveSettings = ObserveSettings()
    streams: StreamsSettings = StreamsSettings()
    vectors: VectorsSettings = VectorsSettings()
    nats: NatsSettings = NatsSettings()
    limits: LimitsSettings = LimitsSettings()
    service_name: str = Field("mnemo", description="set by each process for its logs, spans and connection names")

    @property
    def nats_servers(self) -> list[str]:
        """``nats_url`` as the list nats-py's ``connect`` takes: it does not split a comma-separated string."""
        return [url.strip() for url in self.nats_url.split(",") if url.strip()]


def read_section(name: str, model: type[Section]) -> Section:
    """The section ``name`` of the tree (``MNEMO_<NAME>__<KEY>``, nested groups with ``__`` again), read from
    the environment like :class:`Settings`; a service's composition root calls it once at start."""
    field: dict[str, Any] = {name: (model, model())}
    tree = create_model(f"{model.__name__}Tree", __base__=_Tree, **field)
    section: Section = getattr(tree(), name)
    return section
