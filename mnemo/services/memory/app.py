"""Memory service wiring: request-reply subscribers (``mnemo.shared.rpc.serve``).

Subjects ``mnemo.rpc.memory.convert_to_lore.v1``, ``mnemo.rpc.memory.delete.v1``,
``mnemo.rpc.memory.list.v1`` and the conversation reads ``mnemo.rpc.conversation.{list,timeline}.v1``, each in the queue group ``mnemo_memory`` (replicas share requests; each is
answered once). Every request gets a reply: the reply model, or ``ErrorReply`` with ``bad_request`` (invalid
JSON, unknown fields or a schema violation, saying what is wrong), ``not_found`` (no such memory for that
tenant and user) or ``internal``. The service needs MongoDB and the log only: vectors follow from the events it appends
(the embedding service consumes them).
"""

from __future__ import annotations

import functools

from faststream.nats import NatsRouter

from mnemo.services.memory.conversations import Conversations
from mnemo.services.memory.knowledge_items import FactItems
from mnemo.services.memory.memories import Memories, MemoryNotFound
from mnemo.shared import subjects
from mnemo.shared.bootstrap import ServiceDefinition
from mnemo.shared.deps import Deps
from mnemo.shared.limits import RateLimiter
from mnemo.shared.readmodels.catalog import CONVERSATIONS, KNOWLEDGE, LEGACY_LORE, SUMMARIES
from mnemo.shared.readmodels.ports import KnowledgePort, LegacyLorePort, SummariesPort
from mnemo.shared.rpc import serve
from mnemo_client.wire.conversation_contract import ConversationListRequest, ConversationTimelineRequest
from mnemo_client.wire.memory_contract import MemoryConvertToLoreRequest, MemoryDeleteRequest, MemoryListRequest

SERVICE = "memory"


def create_router(
    deps: Deps,
    *,
    summaries: SummariesPort | None = None,
    legacy: LegacyLorePort | None = None,
    knowledge: KnowledgePort | None = None,
) -> NatsRouter:
    """``summaries``, ``legacy``, ``knowledge``: read models to use instead of the MongoDB ones (component
    tests)."""
    router = NatsRouter()
    summaries = summaries or deps.read_model(SUMMARIES)
    knowledge = knowledge or deps.read_model(KNOWLEDGE)
    memories = Memories(
        deps.store,
        summaries,
        legacy or deps.read_model(LEGACY_LORE),
        deps.publisher,
        FactItems(knowledge),
    )
    # Another user's or tenant's memory is indistinguishable from an unknown one: not_found.
    on = functools.partial(
        serve, router, service=SERVICE, errors={MemoryNotFound: "not_found"}, limiter=RateLimiter(deps.settings.limits)
    )
    on(subjects.MEMORY_CONVERT_TO_LORE, request=MemoryConvertToLoreRequest, call=memories.convert_to_lore)
    on(subjects.MEMORY_DELETE, request=MemoryDeleteRequest, call=memories.delete)
    on(subjects.MEMORY_LIST, request=MemoryListRequest, call=memories.list_items, max_workers=4)
    conversations = Conversations(deps.store, deps.read_model(CONVERSATIONS), summaries, knowledge)
    on(subjects.CONVERSATION_LIST, request=ConversationListRequest, call=conversations.list_conversations)
    on(subjects.CONVERSATION_TIMELINE, request=ConversationTimelineRequest, call=conversations.timeline)
    return router


DEFINITION = ServiceDefinition(SERVICE, create_router, read_models=(SUMMARIES, KNOWLEDGE, LEGACY_LORE, CONVERSATIONS))
