"""Memory-extractor wiring: one durable JetStream batch consumer on the log (see ``handlers.py``) and the
request-reply subscribers (``mnemo.shared.rpc.serve``): ``mnemo.rpc.memory.promote.v1``,
``mnemo.rpc.memory.unpromote.v1`` and knowledge by hand, ``mnemo.rpc.knowledge.fact.*.v1``, in the queue group ``mnemo_memory_extractor`` (replicas share requests;
each answered once)."""

from __future__ import annotations

import functools

from faststream.nats import NatsRouter

from mnemo.services.memory_extractor.audit import FactAudit
from mnemo.services.memory_extractor.handlers import HANDLERS, MemoryExtractor
from mnemo.services.memory_extractor.learning import Learning
from mnemo.services.memory_extractor.manual import ManualKnowledge
from mnemo.services.memory_extractor.promotion import Promotions
from mnemo.services.memory_extractor.revisions import Revisions
from mnemo.services.memory_extractor.settings import SECTION, KnowledgeSettings
from mnemo.shared import subjects
from mnemo.shared.aggregates.knowledge import FactNotFound, NotAllowed
from mnemo.shared.bootstrap import ServiceDefinition
from mnemo.shared.consumers import log_consumer_router
from mnemo.shared.deps import Deps
from mnemo.shared.limits import RateLimiter
from mnemo.shared.readmodels.catalog import CONVERSATIONS, KNOWLEDGE, WITNESSED
from mnemo.shared.rpc import serve
from mnemo.shared.settings import read_section
from mnemo_client.wire.knowledge_contract import (
    FactAddRequest,
    FactEditRequest,
    FactHistoryRequest,
    FactListRequest,
    FactRetractRequest,
)
from mnemo_client.wire.memory_contract import MemoryPromoteRequest, MemoryUnpromoteRequest

SERVICE = "memory-extractor"


def create_router(deps: Deps, settings: KnowledgeSettings | None = None) -> NatsRouter:
    knowledge = deps.read_model(KNOWLEDGE)
    learning = Learning(
        deps.store,
        deps.saver,
        knowledge,
        embedder=deps.embedder,
        chat_model=deps.chat_model,
        settings=settings or read_section(SECTION, KnowledgeSettings),
        family=deps.read_model(CONVERSATIONS).family,
    )
    revisions = Revisions(deps.store, knowledge, learning)
    extractor = MemoryExtractor(deps.saver, deps.read_model(WITNESSED), learning, revisions)
    router = log_consumer_router(
        deps,
        service=SERVICE,
        handlers=HANDLERS,
        handle=extractor.on_batch,
        title="memory-extractor: who witnessed each recorded message and what each character learned",
    )
    promotions = Promotions(deps.store, deps.saver, knowledge)
    # not_found: no such fact for that tenant and user; bad_request: a change the fact's state does not allow.
    on = functools.partial(
        serve,
        router,
        service=SERVICE,
        errors={FactNotFound: "not_found", NotAllowed: "bad_request"},
        limiter=RateLimiter(deps.settings.limits),
    )
    on(subjects.MEMORY_PROMOTE, request=MemoryPromoteRequest, call=promotions.promote)
    on(subjects.MEMORY_UNPROMOTE, request=MemoryUnpromoteRequest, call=promotions.unpromote)
    manual, audit = ManualKnowledge(deps.store, deps.saver, knowledge), FactAudit(deps.store, knowledge)
    on(subjects.KNOWLEDGE_FACT_LIST, request=FactListRequest, call=manual.list_facts, max_workers=4)
    on(subjects.KNOWLEDGE_FACT_ADD, request=FactAddRequest, call=manual.add)
    on(subjects.KNOWLEDGE_FACT_EDIT, request=FactEditRequest, call=manual.edit)
    on(subjects.KNOWLEDGE_FACT_RETRACT, request=FactRetractRequest, call=manual.retract)
    on(subjects.KNOWLEDGE_FACT_HISTORY, request=FactHistoryRequest, call=audit.history)
    return router


DEFINITION = ServiceDefinition(SERVICE, create_router, read_models=(KNOWLEDGE, CONVERSATIONS, WITNESSED))
