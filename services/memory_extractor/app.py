"""Memory-extractor wiring: one durable JetStream batch consumer on the log (see ``handlers.py``) and two
request-reply subscribers (see ``rpc.py``): ``mnemo.rpc.memory.promote.v1`` and
``mnemo.rpc.memory.unpromote.v1``, in the queue group ``mnemo_memory_extractor`` (replicas share requests;
each answered once)."""

from __future__ import annotations

from faststream.nats import NatsRouter

from services.memory_extractor.handlers import MemoryExtractor
from services.memory_extractor.learning import KnowledgeSettings, Learning
from services.memory_extractor.promotion import Promotions
from services.memory_extractor.revisions import Revisions
from services.memory_extractor.rpc import StrictPromote, StrictUnpromote, answer
from shared import subjects
from shared.consumers import log_consumer_router
from shared.events.contract import ErrorReply
from shared.events.memory_contract import MemoryScopeReply
from shared.readmodels.knowledge import KnowledgeReadModel
from shared.readmodels.witnessed import WitnessedReadModel
from shared.rpc import raw_body
from shared.runtime import Deps

SERVICE = "memory-extractor"


def create_router(deps: Deps, settings: KnowledgeSettings | None = None) -> NatsRouter:
    knowledge = KnowledgeReadModel(deps.db, deps.cipher)
    learning = Learning(
        deps.store,
        deps.publisher,
        knowledge,
        embedder=deps.embedder,
        chat_model=deps.chat_model,
        settings=settings or KnowledgeSettings(),
    )
    revisions = Revisions(deps.store, knowledge, learning)
    extractor = MemoryExtractor(deps.store, deps.publisher, WitnessedReadModel(deps.db), learning, revisions)
    router = log_consumer_router(
        deps,
        service=SERVICE,
        handle=extractor.on_batch,
        title="memory-extractor: who witnessed each recorded message and what each character learned",
    )
    promotions = Promotions(deps.store, deps.publisher, knowledge)
    queue = subjects.queue_group(SERVICE)

    @router.subscriber(
        subjects.MEMORY_PROMOTE,
        queue=queue,
        decoder=raw_body,
        title=f"memory-extractor: {subjects.MEMORY_PROMOTE}",
        description="Request MemoryPromoteRequest; reply MemoryScopeReply or ErrorReply.",
    )
    async def on_memory_promote(body: bytes) -> MemoryScopeReply | ErrorReply:
        return await answer(StrictPromote, body, promotions.promote)

    @router.subscriber(
        subjects.MEMORY_UNPROMOTE,
        queue=queue,
        decoder=raw_body,
        title=f"memory-extractor: {subjects.MEMORY_UNPROMOTE}",
        description="Request MemoryUnpromoteRequest; reply MemoryScopeReply or ErrorReply.",
    )
    async def on_memory_unpromote(body: bytes) -> MemoryScopeReply | ErrorReply:
        return await answer(StrictUnpromote, body, promotions.unpromote)

    return router
