"""Memory service wiring: request-reply subscribers (``mnemo.shared.rpc.serve``).

Subjects ``mnemo.rpc.memory.{convert_to_lore,delete,list}.v1`` (summaries and legacy lore), the conversation
reads ``mnemo.rpc.conversation.{list,timeline}.v1``, the chat import ``mnemo.rpc.chat.import.v1`` (it publishes
the file's chat events on the service's NATS connection), and the memory API's
``mnemo.rpc.memory.{remember,update,forget,history}.v1`` with their ``mnemo.rpc.memory.engine.*`` twins (the
engine's right, ``mnemo/shared/namespaces.py``), each in the queue group ``mnemo_memory`` (replicas share
requests; each is answered once). Every request gets a reply: the reply model, or ``ErrorReply`` with
``bad_request`` (invalid JSON, unknown fields or a schema violation, saying what is wrong), ``not_found`` (no
such memory for that tenant and user), ``forbidden`` (a namespace the call may not write), ``conflict`` (an
update's ``expected_version`` is stale), ``unavailable`` (JetStream did not acknowledge an imported event) or
``internal``. The service needs MongoDB and the log only (and the chat stream for imports): vectors
follow from the events it appends (the embedding service consumes them); ``memory.search`` is the
context-assembler's, beside the vector index.
"""

from __future__ import annotations

import functools

from faststream.nats import NatsRouter

from mnemo.services.memory.chat_import.rpc import ChatImportRefused, ChatImports, ChatImportUnavailable
from mnemo.services.memory.conversations import Conversations
from mnemo.services.memory.knowledge_items import FactItems
from mnemo.services.memory.memories import Memories, MemoryNotFound, MemoryNotLive
from mnemo.services.memory.memory_api import MemoryApi
from mnemo.shared import subjects
from mnemo.shared.aggregates.memories import (
    MemoryRequestRefused,
    NamespaceForbidden,
    RememberedNotFound,
    VersionConflict,
)
from mnemo.shared.bootstrap import ServiceDefinition
from mnemo.shared.deps import Deps
from mnemo.shared.limits import RateLimiter
from mnemo.shared.readmodels.catalog import CONVERSATIONS, KNOWLEDGE, LEGACY_LORE, MEMORIES, SUMMARIES
from mnemo.shared.rpc import serve
from mnemo_client.wire.chat_import_contract import ChatImportRequest
from mnemo_client.wire.conversation_contract import ConversationListRequest, ConversationTimelineRequest
from mnemo_client.wire.memory_api_contract import (
    MemoryForgetRequest,
    MemoryHistoryRequest,
    MemoryRememberRequest,
    MemoryUpdateRequest,
)
from mnemo_client.wire.memory_contract import (
    MemoryConvertToLoreRequest,
    MemoryDeleteRequest,
    MemoryEditRequest,
    MemoryListRequest,
)

SERVICE = "memory"
#: The memory API's subjects (remember, update, forget, history); the engine's twins may write every namespace.
PLAYER_SUBJECTS = (subjects.MEMORY_REMEMBER, subjects.MEMORY_UPDATE, subjects.MEMORY_FORGET, subjects.MEMORY_HISTORY)
ENGINE_SUBJECTS = subjects.MEMORY_ENGINE_CALLS


def create_router(deps: Deps) -> NatsRouter:
    router = NatsRouter()
    limiter = RateLimiter(deps.settings.limits)
    summaries, knowledge = deps.read_model(SUMMARIES), deps.read_model(KNOWLEDGE)
    listing = Memories(deps.store, summaries, deps.read_model(LEGACY_LORE), deps.saver, FactItems(knowledge))
    # Another user's or tenant's memory is indistinguishable from an unknown one: not_found.
    memory_errors: dict[type[Exception], str] = {MemoryNotFound: "not_found", MemoryNotLive: "bad_request"}
    on = functools.partial(serve, router, service=SERVICE, errors=memory_errors, limiter=limiter)
    on(subjects.MEMORY_CONVERT_TO_LORE, request=MemoryConvertToLoreRequest, call=listing.convert_to_lore)
    on(subjects.MEMORY_DELETE, request=MemoryDeleteRequest, call=listing.delete)
    on(subjects.MEMORY_EDIT, request=MemoryEditRequest, call=listing.edit)
    on(subjects.MEMORY_LIST, request=MemoryListRequest, call=listing.list_items, max_workers=4)
    conversations = Conversations(deps.store, deps.read_model(CONVERSATIONS), summaries, knowledge)
    on(subjects.CONVERSATION_LIST, request=ConversationListRequest, call=conversations.list_conversations)
    on(subjects.CONVERSATION_TIMELINE, request=ConversationTimelineRequest, call=conversations.timeline)
    # Imports wait on JetStream's acknowledgements, not on this process: several at once, so that one tenant's
    # long history does not hold another's import back (each import still publishes in file order).
    imports = ChatImports(deps.nc)
    import_errors = {ChatImportRefused: "bad_request", ChatImportUnavailable: "unavailable"}
    serve(router, subjects.CHAT_IMPORT, service=SERVICE, request=ChatImportRequest, call=imports.handle,
          errors=import_errors, limiter=limiter, max_workers=4)  # fmt: skip

    api = MemoryApi(deps.store, deps.read_model(MEMORIES), deps.saver)
    errors = {
        RememberedNotFound: "not_found",
        NamespaceForbidden: "forbidden",
        VersionConflict: "conflict",
        MemoryRequestRefused: "bad_request",
    }
    answer = functools.partial(serve, router, service=SERVICE, errors=errors, limiter=limiter, max_workers=4)
    for engine, names in ((False, PLAYER_SUBJECTS), (True, ENGINE_SUBJECTS)):
        remember, update, forget, history = names
        answer(remember, request=MemoryRememberRequest, call=functools.partial(api.remember, engine=engine))
        answer(update, request=MemoryUpdateRequest, call=functools.partial(api.update, engine=engine))
        answer(forget, request=MemoryForgetRequest, call=functools.partial(api.forget, engine=engine))
        answer(history, request=MemoryHistoryRequest, call=functools.partial(api.history, engine=engine))
    return router


DEFINITION = ServiceDefinition(
    SERVICE, create_router, read_models=(SUMMARIES, KNOWLEDGE, LEGACY_LORE, CONVERSATIONS, MEMORIES)
)
