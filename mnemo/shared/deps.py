"""What a service needs at run time, gathered in one object built by the composition root.

Services receive a :class:`Deps` and never construct adapters themselves, so tests can hand them real
servers or fakes and the embedded stack can share one vector index and one embedder between services
(Qdrant Edge has a single owner process). A service reads and writes its read models through their ports
(:meth:`Deps.read_model`, the projection catalog's entries), never through the database.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from faststream.nats import NatsBroker
from nats.aio.client import Client as NatsClient
from pymongo.asynchronous.database import AsyncDatabase

from mnemo.shared.crypto import FieldCipher
from mnemo.shared.embedders.port import Embedder
from mnemo.shared.eventlog.codec import StoredDoc
from mnemo.shared.eventlog.port import EventStore
from mnemo.shared.eventlog.save import EventSaver
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.llm.port import ChatModel
from mnemo.shared.probes import Probes
from mnemo.shared.readmodels.catalog import MongoReadModelPorts, ReadModel, ReadModelPorts
from mnemo.shared.readmodels.rows import MongoTenantRows, TenantRows
from mnemo.shared.readmodels.usage_counts import MongoUsageCounts, UsageCounts
from mnemo.shared.settings import Settings
from mnemo.shared.vectors.port import VectorIndex

P = TypeVar("P")


class EventDecoder(Protocol):
    async def from_wire(self, data: bytes, decrypt: Collection[str] | None = None) -> EventEnvelope:
        """A relayed log event (still encrypted on the wire) decrypted and upcast; ``decrypt``: only these of
        its encrypted fields (the others left out), None: all."""
        ...


class CommittedPublisher(Protocol):
    async def publish_committed(self, events: Sequence[EventEnvelope | StoredDoc]) -> None:
        """Publish freshly committed events (envelopes, or ``AppendResult.stored`` documents, which need no
        second encryption) to JetStream; on failure the relay's recovery loop retries."""
        ...


@dataclass
class Deps:
    settings: Settings
    broker: NatsBroker
    #: What the ports below are built on when not given (their MongoDB adapters); None: in memory (the ports are
    #: fakes, or absent). A service never reads it (tests/unit/test_layout.py): it is given ports.
    db: AsyncDatabase[dict[str, Any]] | None
    store: EventStore
    codec: EventDecoder
    publisher: CommittedPublisher
    cipher: FieldCipher
    vectors: VectorIndex | None = None
    embedder: Embedder | None = None
    chat_model: ChatModel | None = None  # None: no LLM configured, services use their no-LLM fallbacks
    #: Stream mode's read-your-writes wait (``PointsFollower.caught_up``): True once this process's shard has
    #: applied every write acked before the call, False after the given seconds; None: the index is shared.
    vectors_caught_up: Callable[[float], Awaitable[bool]] | None = None
    nc: NatsClient | None = None  # the core's NATS connection (JetStream streams beyond the broker's)
    #: What the service begins once its broker serves (the lore service resumes document imports cut short by
    #: a restart); the hosts (``mnemo.shared.bootstrap.running``, ``mnemo.runtime.stack``) await each after start.
    on_started: list[Callable[[], Awaitable[object]]] = field(default_factory=list)
    #: What the service stops before its broker does (ingest lets its partitions go: batches in flight complete,
    #: leases are released); the hosts await each before ``broker.stop()``.
    on_stopping: list[Callable[[], Awaitable[object]]] = field(default_factory=list)
    #: The process's probes (``mnemo.shared.probes``), for a service whose consumers are not its broker's
    #: subscribers (ingest's partitions): it adds its own readiness check and gauges. None in tests.
    probes: Probes | None = None
    #: The read models' ports (None: the MongoDB adapters over ``db``); ``mnemo.shared.bootstrap.deps_for``
    #: hands a service only those it declares.
    read_models: ReadModelPorts | None = None
    #: Every collection's rows of a tenant, for privacy's erasure and export (None: the MongoDB adapter over
    #: ``db``).
    tenant_rows: TenantRows | None = None
    #: The rows the operators' usage report counts, per tenant (None: the MongoDB adapter over ``db``; none in
    #: memory, where the report is not served).
    usage_counts: UsageCounts | None = None
    #: The one way a service writes to the log (``mnemo.shared.eventlog.save``): append under optimistic
    #: concurrency, project, publish through ``publisher``. Built from ``store`` and ``publisher``.
    saver: EventSaver = field(init=False)

    def __post_init__(self) -> None:
        self.saver = EventSaver(self.store, self.publisher)
        if self.read_models is None and self.db is not None:
            self.read_models = MongoReadModelPorts(self.db, self.cipher)
        if self.tenant_rows is None and self.db is not None:
            self.tenant_rows = MongoTenantRows(self.db)
        if self.usage_counts is None and self.db is not None:
            self.usage_counts = MongoUsageCounts(self.db)

    def require_read_models(self) -> ReadModelPorts:
        if self.read_models is None:
            raise RuntimeError("this service was built without a database or read models")
        return self.read_models

    def read_model(self, model: ReadModel[P]) -> P:
        """The port of ``model`` (an entry of ``mnemo.shared.readmodels.catalog``)."""
        return self.require_read_models().of(model)

    def serves(self, model: ReadModel[Any]) -> bool:
        """Whether ``model``'s port answers: on a database every one does, in memory those with a fake."""
        return self.db is not None or model.fake is not None

    def require_tenant_rows(self) -> TenantRows:
        if self.tenant_rows is None:
            raise RuntimeError("this service was built without a database or tenant rows")
        return self.tenant_rows

    def require_vectors(self) -> VectorIndex:
        if self.vectors is None:
            raise RuntimeError("this service was built without a vector index")
        return self.vectors

    def require_embedder(self) -> Embedder:
        if self.embedder is None:
            raise RuntimeError("this service was built without an embedder")
        return self.embedder
