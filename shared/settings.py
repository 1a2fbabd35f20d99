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

from pydantic import BaseModel, Field, SecretStr, create_model
from pydantic_settings import BaseSettings, SettingsConfigDict


class EmbedderSettings(BaseModel):
    """Which embedding model turns text into vectors."""

    provider: Literal["bundled", "openai"] = Field(
        "bundled", description="`bundled` runs all-MiniLM-L6-v2 int8 on onnxruntime in-process"
    )
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint, e.g. http://host:8000/v1")
    api_key: SecretStr | None = Field(None, description="the OpenAI-compatible endpoint's key")
    model: str = Field("text-embedding-3-small", description="model name sent to the OpenAI-compatible endpoint")
    dimensions: int = Field(384, description="vector size; must match the model")
    batch_size: int = Field(32, ge=1, le=2048, description="texts per request to an HTTP embedding provider")
    spin_threads: bool = Field(
        False,
        description="bundled model: let onnxruntime's threads busy-wait between batches (3-5% faster alone, "
        "but they then burn the cores the pipeline and the other services need)",
    )
    timeout_s: float = Field(30.0, description="an HTTP embedding request's deadline")


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


class StreamsSettings(BaseModel):
    """How mnemo's JetStream streams are declared."""

    replicas: int = Field(
        1,
        ge=1,
        le=5,
        description="copies of each stream in a NATS cluster (3 in `make cluster` and compose; 1 on one server)",
    )
    uploads_max_bytes: int = Field(
        10 * 1024**3, ge=1024**2, description="the MNEMO_UPLOADS object store bucket's total size limit"
    )
    upload_max_object_bytes: int = Field(
        100 * 1024**2,
        ge=1024,
        description="the largest document a client may upload (a larger import ends `failed`, its object deleted)",
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
    vector_collection: str = Field("mnemo", description="the Qdrant collection (one for every tenant, filtered)")
    embedder: EmbedderSettings = EmbedderSettings()
    llm: LLMSettings = LLMSettings()
    delivery: DeliverySettings = DeliverySettings()
    telemetry: TelemetrySettings = TelemetrySettings()
    streams: StreamsSettings = StreamsSettings()
    vectors: VectorsSettings = VectorsSettings()
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
