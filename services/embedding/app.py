"""Embedding wiring: ONE durable JetStream batch consumer on the log.

Subject ``mnemo.log.>`` on stream MNEMO_LOG, durable ``mnemo_embedding_main`` shared by the replicas. Ack
policy: manual via ``BatchConsumer`` (ack once vectors are written; undecodable events and invalid payloads
to ``mnemo.dlq.embedding.v1`` with the reason; failures naked with backoff, then dead-lettered).
"""

from __future__ import annotations

from faststream.nats import NatsRouter
from nats.aio.msg import Msg

from services.embedding.handlers import EmbeddingHandler
from shared import subjects
from shared.broker import LOG_JSTREAM
from shared.chunking import chunk_text
from shared.delivery import BatchConsumer, DeadLetters, subscribe_batches
from shared.events.envelope import EventEnvelope
from shared.readmodels import ReadModels
from shared.runtime import Deps
from shared.telemetry import tracer

SERVICE = "embedding"


def chunk_strings(text: str) -> list[str]:
    return [c.text for c in chunk_text(text)]


def create_router(deps: Deps) -> NatsRouter:
    router = NatsRouter()
    handler = EmbeddingHandler(
        deps.require_vectors(), deps.require_embedder(), ReadModels(deps.db, deps.cipher), chunk_strings
    )

    async def decode(msg: Msg) -> EventEnvelope:
        return await deps.codec.from_wire(msg.data)

    consumer: BatchConsumer[EventEnvelope] = BatchConsumer(
        decode=decode,
        handle=handler.on_log_batch,
        dead_letters=DeadLetters(deps.broker, SERVICE),
        max_deliver=deps.settings.delivery.max_deliver,
        ack_wait_s=deps.settings.delivery.ack_wait_s,
        tracer=tracer(SERVICE, deps.settings.telemetry),
    )
    subscribe_batches(
        router,
        subject=subjects.LOG_ALL,
        stream=LOG_JSTREAM,
        durable=subjects.durable(SERVICE),
        consumer=consumer,
        delivery=deps.settings.delivery,
        title="embedding: chunk and embed messages and summaries into the vector index",
    )
    return router
