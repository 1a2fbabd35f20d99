"""What the component tests (``tests/<service>/component/``) share: a service's ``Deps`` with no server behind it.

The event log is the in-memory store (it still encrypts and decrypts through the codec), the read models are
the in-memory fakes (``mnemo.shared.readmodels.inmemory``), each checked against its MongoDB adapter by
``tests/contract/test_readmodels_contract.py``, and what a service publishes to JetStream is kept in
``Published`` so a test can hand it on to the next consumer, as the relay would. RPC services run on
FastStream's ``TestNatsBroker`` (in memory, no acks or redelivery: these tests cover logic, not delivery);
batch consumers are driven through their batch handlers with ``items``.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from faststream.nats import NatsBroker, NatsRouter, TestNatsBroker

from mnemo.services.context_assembler.app import create_router as create_assembler
from mnemo.services.context_assembler.gather.reads import ReadModelReads
from mnemo.services.context_assembler.recall.search import RecallReads
from mnemo.services.context_assembler.settings import AssemblerSettings
from mnemo.services.embedding.app import chunk_strings
from mnemo.services.embedding.handlers import EmbeddingHandler
from mnemo.services.ingest.handlers import IngestHandler
from mnemo.services.ingest.recorder import Recorder
from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore
from mnemo.shared.delivery import Item
from mnemo.shared.deps import Deps
from mnemo.shared.eventlog.codec import EventCodec, StoredDoc
from mnemo.shared.eventlog.inmemory import InMemoryEventStore
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import REGISTRY
from mnemo.shared.readmodels import catalog
from mnemo.shared.readmodels.catalog import FakeReadModelPorts, ReadModelPorts
from mnemo.shared.settings import Settings
from mnemo.shared.vectors.edge import EdgeVectorIndex
from mnemo.shared.vectors.port import VectorIndex


class Published:
    """A ``CommittedPublisher`` that keeps what would have gone to JetStream, decoded, in order."""

    def __init__(self, codec: EventCodec) -> None:
        self._codec = codec
        self.events: list[EventEnvelope] = []

    async def publish_committed(self, events: Sequence[EventEnvelope | StoredDoc]) -> None:
        for e in events:
            self.events.append(e if isinstance(e, EventEnvelope) else await self._codec.decode(e))

    def take(self) -> list[EventEnvelope]:
        """The events published since the last ``take``."""
        taken, self.events = self.events, []
        return taken

    def of_type(self, *types: str) -> list[EventEnvelope]:
        return [e for e in self.events if e.type in types]


#: A memory to retrieve by meaning, and lines about anything else to bury it in.
DRAGON = "The dragon sleeps under the old mill, guarding a chest of silver."
FILLER = [
    "We bought bread at the market.", "The weather turned cold by noon.", "A bard sang about the harvest.",
    "The innkeeper lost his keys again.", "Our horses needed new shoes.", "We played dice until late.",
    "The bridge was repaired last spring.", "Children chased geese along the river.",
]  # fmt: skip


def deps(**extra: Any) -> Deps:
    """Deps over the in-memory event store and the read models' in-memory fakes, with no database (a test may
    also hand a router the fakes it shares with another)."""
    cipher = FieldCipher(os.urandom(32), InMemoryKeyStore())
    codec = EventCodec(REGISTRY, cipher)
    return Deps(
        settings=Settings(),
        broker=NatsBroker(),
        store=InMemoryEventStore(codec),
        codec=codec,
        publisher=Published(codec),
        cipher=cipher,
        **{"db": None, "read_models": FakeReadModelPorts(), **extra},
    )


def published(d: Deps) -> Published:
    assert isinstance(d.publisher, Published)
    return d.publisher


class Msg:
    """Stands for the JetStream message of an item: rejections name it, nothing else reads it."""

    def __init__(self, label: str) -> None:
        self.label = label

    def __repr__(self) -> str:
        return f"Msg({self.label})"


def items(values: Sequence[Any]) -> list[Item[Any]]:
    return [Item(v, Msg(str(i))) for i, v in enumerate(values)]  # type: ignore[arg-type]


class Rpc:
    """Request-reply on a ``TestNatsBroker``: ``await rpc(subject, body)`` is the decoded JSON reply."""

    def __init__(self, broker: NatsBroker) -> None:
        self.broker = broker

    async def __call__(self, subject: str, body: bytes | dict[str, Any]) -> dict[str, Any]:
        data = body if isinstance(body, bytes) else json.dumps(body, default=str).encode()
        reply = await self.broker.request(data, subject, timeout=10)
        result: dict[str, Any] = json.loads(reply.body)
        return result


def assert_bad_request(reply: dict[str, Any], says: str) -> None:
    """The RPC reply is an error and nothing else: ``bad_request``, with a message that names ``says``."""
    assert set(reply) == {"error"}
    assert reply["error"]["code"] == "bad_request"
    assert says in reply["error"]["message"]


def broker_with(*routers: NatsRouter) -> NatsBroker:
    broker = NatsBroker()
    for r in routers:
        broker.include_router(r)
    return broker


@asynccontextmanager
async def served(*routers: NatsRouter) -> AsyncIterator[Rpc]:
    """``routers`` behind one ``TestNatsBroker``, and a caller of their RPCs."""
    broker = broker_with(*routers)
    async with TestNatsBroker(broker):
        yield Rpc(broker)


class Reads:
    """The read models the embedding service and the context-assembler read: the in-memory fakes of ``ports``
    (a new set when not given), so a service built on ``deps(read_models=reads.ports)`` reads and writes the
    same ones."""

    def __init__(self, ports: ReadModelPorts | None = None) -> None:
        self.ports = ports or FakeReadModelPorts()
        self.models = self.ports.of(catalog.CONVERSATIONS)
        self.summaries = self.ports.of(catalog.SUMMARIES)
        self.knowledge = self.ports.of(catalog.KNOWLEDGE)
        self.legacy = self.ports.of(catalog.LEGACY_LORE)
        self.lore = self.ports.of(catalog.LORE)
        self.memories = self.ports.of(catalog.MEMORIES)
        self.timed = self.ports.of(catalog.LORE_TIMED)

    def embedding_handler(self, index: VectorIndex, embedder: Any, *, facts: bool = True) -> EmbeddingHandler:
        """The embedding service's handler over these read models (``facts=False``: facts are not indexed)."""
        knowledge = self.knowledge if facts else None
        return EmbeddingHandler(
            index,
            embedder,
            self.models,
            chunk_strings,
            self.summaries,
            self.legacy,
            self.lore,
            knowledge,
            memories=self.memories,
        )

    def assembler_reads(self) -> ReadModelReads:
        """What the context-assembler reads, over these read models."""
        return ReadModelReads.over(self.ports)

    def recall_reads(self) -> RecallReads:
        """What the memory search reads, over these read models."""
        return RecallReads.over(self.ports)


@asynccontextmanager
async def edge_index(path: Path, embedder: Any) -> AsyncIterator[EdgeVectorIndex]:
    """Qdrant Edge in ``path`` (the real engine, in process), its collection sized for ``embedder``."""
    index = EdgeVectorIndex(path, "vectors")
    await index.ensure_collection(embedder.dimensions)
    try:
        yield index
    finally:
        await index.close()


@asynccontextmanager
async def retrieval_chain(
    d: Deps, writes_to: VectorIndex, embedder: Any, *, history_limit: int, **settings: Any
) -> AsyncIterator[tuple[IngestHandler, EmbeddingHandler, NatsBroker]]:
    """Ingest, the embedding service (writing to ``writes_to``) and the context-assembler (reading
    ``d.vectors``, with a short history window so that older messages come back only by meaning) over one set
    of in-memory read models, the assembler behind ``TestNatsBroker``. Generous deadlines: the machine may be
    loaded, and what is tested is what is found, not how fast. ``settings``: other assembler settings."""
    reads = Reads(d.require_read_models())
    ingest = IngestHandler(Recorder(d.store, reads.models, d.saver))
    embedding = reads.embedding_handler(writes_to, embedder, facts=False)
    settings = AssemblerSettings(
        history_limit=history_limit, min_history=2, retrieval_timeout_s=30, read_timeout_s=30, deadline_s=60, **settings
    )
    router = create_assembler(d, settings, reads.assembler_reads())
    async with served(router) as rpc:
        yield ingest, embedding, rpc.broker


__all__ = [
    "Msg",
    "Published",
    "Reads",
    "Rpc",
    "TestNatsBroker",
    "assert_bad_request",
    "broker_with",
    "deps",
    "edge_index",
    "items",
    "published",
    "retrieval_chain",
    "served",
]
