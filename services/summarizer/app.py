"""Summarizer wiring: one durable JetStream batch consumer on the log (see ``handlers.py``)."""

from __future__ import annotations

from faststream.nats import NatsRouter
from nats.aio.msg import Msg

from services.summarizer.domain import SummarizerSettings
from services.summarizer.handlers import Summarizer
from shared import subjects
from shared.broker import LOG_JSTREAM
from shared.delivery import BatchConsumer, DeadLetters, subscribe_batches
from shared.events.envelope import EventEnvelope
from shared.readmodels.summaries import SummariesReadModel
from shared.runtime import Deps
from shared.telemetry import tracer

SERVICE = "summarizer"


def create_router(deps: Deps, settings: SummarizerSettings | None = None) -> NatsRouter:
    router = NatsRouter()
    summarizer = Summarizer(
        deps.store,
        deps.publisher,
        deps.require_embedder(),
        SummariesReadModel(deps.db, deps.cipher),
        settings or SummarizerSettings(),
        deps.chat_model,
    )

    async def decode(msg: Msg) -> EventEnvelope:
        return await deps.codec.from_wire(msg.data)

    consumer: BatchConsumer[EventEnvelope] = BatchConsumer(
        decode=decode,
        handle=summarizer.on_batch,
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
        title="summarizer: summaries every N messages (LLM when configured, extractive otherwise)",
    )
    return router
