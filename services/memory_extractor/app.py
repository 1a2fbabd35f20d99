"""Memory-extractor wiring: one durable JetStream batch consumer on the log (see ``handlers.py``)."""

from __future__ import annotations

from faststream.nats import NatsRouter

from services.memory_extractor.handlers import MemoryExtractor
from shared.consumers import log_consumer_router
from shared.readmodels.witnessed import WitnessedReadModel
from shared.runtime import Deps

SERVICE = "memory-extractor"


def create_router(deps: Deps) -> NatsRouter:
    extractor = MemoryExtractor(deps.store, deps.publisher, WitnessedReadModel(deps.db))
    return log_consumer_router(
        deps,
        service=SERVICE,
        handle=extractor.on_batch,
        title="memory-extractor: who witnessed each recorded message",
    )
