"""Memory service wiring: three request-reply subscribers (see ``handlers.py`` for the contract).

Subjects ``mnemo.rpc.memory.convert_to_lore.v1``, ``mnemo.rpc.memory.delete.v1`` and
``mnemo.rpc.memory.list.v1``, each in the queue group ``mnemo_memory`` (replicas share requests; each is
answered once). The service needs MongoDB and the log only: vectors follow from the events it appends
(the embedding service consumes them).
"""

from __future__ import annotations

from faststream.nats import NatsRouter

from services.memory.handlers import StrictConvert, StrictDelete, StrictList, answer
from services.memory.knowledge_items import FactItems
from services.memory.memories import Memories
from shared import subjects
from shared.events.contract import ErrorReply
from shared.events.memory_contract import MemoryConvertToLoreReply, MemoryDeleteReply, MemoryListReply
from shared.readmodels.knowledge import KnowledgeReadModel
from shared.readmodels.legacy_lore import LegacyLoreReadModel
from shared.readmodels.summaries import SummariesReadModel
from shared.rpc import raw_body
from shared.runtime import Deps

SERVICE = "memory"


def create_router(deps: Deps) -> NatsRouter:
    router = NatsRouter()
    memories = Memories(
        deps.store,
        SummariesReadModel(deps.db, deps.cipher),
        LegacyLoreReadModel(deps.db, deps.cipher),
        deps.publisher,
        FactItems(KnowledgeReadModel(deps.db, deps.cipher)),
    )
    queue = subjects.queue_group(SERVICE)

    @router.subscriber(
        subjects.MEMORY_CONVERT_TO_LORE,
        queue=queue,
        decoder=raw_body,
        title=f"memory: {subjects.MEMORY_CONVERT_TO_LORE}",
        description="Request MemoryConvertToLoreRequest; reply MemoryConvertToLoreReply or ErrorReply.",
    )
    async def on_memory_convert_to_lore(body: bytes) -> MemoryConvertToLoreReply | ErrorReply:
        return await answer(StrictConvert, body, memories.convert_to_lore)

    @router.subscriber(
        subjects.MEMORY_DELETE,
        queue=queue,
        decoder=raw_body,
        title=f"memory: {subjects.MEMORY_DELETE}",
        description="Request MemoryDeleteRequest; reply MemoryDeleteReply or ErrorReply.",
    )
    async def on_memory_delete(body: bytes) -> MemoryDeleteReply | ErrorReply:
        return await answer(StrictDelete, body, memories.delete)

    @router.subscriber(
        subjects.MEMORY_LIST,
        queue=queue,
        decoder=raw_body,
        max_workers=4,
        title=f"memory: {subjects.MEMORY_LIST}",
        description="Request MemoryListRequest; reply MemoryListReply or ErrorReply.",
    )
    async def on_memory_list(body: bytes) -> MemoryListReply | ErrorReply:
        return await answer(StrictList, body, memories.list_items)

    return router
