"""Embedding wiring: ONE durable JetStream batch consumer on the log.

Stream MNEMO_LOG, durable ``mnemo_embedding_main`` shared by the replicas, filtering the subjects of the event
types ``domain.HANDLERS`` handles. Ack
policy: manual via ``BatchConsumer`` (ack once vectors are written; undecodable events and invalid payloads
to ``mnemo.dlq.embedding.v1`` with the reason; failures naked with backoff, then dead-lettered). The handler
is staged (``EmbeddingHandler.begin``): the next batch is fetched, decoded and planned while this one is
embedded and written, and it fetches ``delivery.embedding_batch_size`` (1,024) events per pull.
"""

from __future__ import annotations

from faststream.nats import NatsRouter

from mnemo.services.embedding.chunking import chunk_text
from mnemo.services.embedding.domain import HANDLERS
from mnemo.services.embedding.handlers import EmbeddingHandler
from mnemo.shared.bootstrap import ServiceDefinition
from mnemo.shared.consumers import log_consumer_router
from mnemo.shared.delivery import Staged
from mnemo.shared.deps import Deps
from mnemo.shared.readmodels.catalog import CONVERSATIONS, DOCUMENTS, KNOWLEDGE, LEGACY_LORE, LORE, MEMORIES, SUMMARIES

SERVICE = "embedding"


def chunk_strings(text: str) -> list[str]:
    return [c.text for c in chunk_text(text)]


def create_router(deps: Deps) -> NatsRouter:
    handler = EmbeddingHandler(
        deps.require_vectors(),
        deps.require_embedder(),
        deps.read_model(CONVERSATIONS),
        chunk_strings,
        deps.read_model(SUMMARIES),
        deps.read_model(LEGACY_LORE),
        deps.read_model(LORE),
        deps.read_model(KNOWLEDGE),
        deps.read_model(DOCUMENTS),
        deps.read_model(MEMORIES),
    )
    return log_consumer_router(
        deps,
        service=SERVICE,
        handlers=HANDLERS,
        handle=Staged(handler.begin),
        title="embedding: chunk and embed messages, summaries, lore, facts, documents and memories into the index",
        batch_size=deps.settings.delivery.embedding_batch_size,
    )


DEFINITION = ServiceDefinition(
    SERVICE,
    create_router,
    vectors="write",
    embedder=True,
    read_models=(CONVERSATIONS, SUMMARIES, LEGACY_LORE, LORE, KNOWLEDGE, DOCUMENTS, MEMORIES),
)
