"""Memory-extractor wiring: one durable JetStream batch consumer on the log (see ``handlers.py``)."""

from __future__ import annotations

from faststream.nats import NatsRouter
from nats.aio.msg import Msg

from services.memory_extractor.handlers import MemoryExtractor
from shared import subjects
from shared.broker import LOG_JSTREAM
from shared.delivery import BatchConsumer, DeadLetters, subscribe_batches
from shared.events.envelope import EventEnvelope
from shared.readmodels.witnessed import WitnessedReadModel
from shared.runtime import Deps
from shared.telemetry import tracer

SERVICE = "memory-extractor"


def create_router(deps: Deps) -> NatsRouter:
    router = NatsRouter()
    witnessed = WitnessedReadModel(deps.db)
    extractor = MemoryExtractor(deps.store, deps.publisher, witnessed)

    async def decode(msg: Msg) -> EventEnvelope:
        return await deps.codec.from_wire(msg.data)

    consumer: BatchConsumer[EventEnvelope] = BatchConsumer(
        decode=decode,
        handle=extractor.on_batch,
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
        title="memory-extractor: who witnessed each recorded message",
    )
    return router
