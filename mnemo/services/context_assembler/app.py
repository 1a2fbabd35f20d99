"""Context-assembler wiring: ``mnemo.rpc.context.assemble.v1`` (see ``handlers.py`` for the contract), the
memory API's search, ``mnemo.rpc.memory.search.v1`` (``recall/search.py``): both read the vector index and every
read model with the same visibility rules, so they are answered beside each other; and the lore activation test,
``mnemo.rpc.lore.test_activation.v1`` (``lore/trial.py``), on the same lore loader as the context."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from faststream.nats import NatsRouter

from mnemo.services.context_assembler.faults import SwitchableIndex
from mnemo.services.context_assembler.gather.cache import LogCache
from mnemo.services.context_assembler.gather.gathering import Gatherer
from mnemo.services.context_assembler.gather.invalidations import SUBJECTS as INVALIDATING
from mnemo.services.context_assembler.gather.invalidations import on_relayed
from mnemo.services.context_assembler.gather.memo import MemoEmbedder
from mnemo.services.context_assembler.gather.port import ContextReads
from mnemo.services.context_assembler.gather.reads import ReadModelReads
from mnemo.services.context_assembler.handlers import answer
from mnemo.services.context_assembler.index_status import (
    IndexStatuses,
    NoVectorIndex,
    jetstream_backlog,
    no_backlog,
)
from mnemo.services.context_assembler.lore.documents import DocumentLore
from mnemo.services.context_assembler.lore.loader import LoreLoader
from mnemo.services.context_assembler.lore.timed import TimedStates
from mnemo.services.context_assembler.lore.trial import BookNotFound, try_activation
from mnemo.services.context_assembler.metering import ContextMeter
from mnemo.services.context_assembler.recall.search import MemorySearch, NamespaceRefused, RecallReads
from mnemo.services.context_assembler.settings import SECTION, AssemblerSettings
from mnemo.services.context_assembler.usage_report import UsageReport
from mnemo.shared import subjects
from mnemo.shared.bootstrap import ServiceDefinition
from mnemo.shared.deps import Deps
from mnemo.shared.limits import RateLimiter
from mnemo.shared.readmodels.catalog import (
    CONVERSATIONS,
    DOCUMENTS,
    KNOWLEDGE,
    LEGACY_LORE,
    LORE,
    LORE_TIMED,
    MEMORIES,
    SUMMARIES,
)
from mnemo.shared.rpc import RpcMeter, raw_body, serve
from mnemo.shared.settings import read_section
from mnemo.shared.tokens import token_counter
from mnemo_client.wire.contract import ContextAssembleReply, ErrorReply
from mnemo_client.wire.lore_activation_contract import LoreTestActivationReply, LoreTestActivationRequest
from mnemo_client.wire.memory_api_contract import MemorySearchRequest
from mnemo_client.wire.memory_index_contract import MemoryIndexStatusRequest
from mnemo_client.wire.ops_contract import UsageRequest

SERVICE = "context-assembler"


def create_router(
    deps: Deps,
    settings: AssemblerSettings | None = None,
    reads: ContextReads | None = None,
) -> NatsRouter:
    """``reads``: what the context is gathered from, instead of the read models of ``deps`` (which component
    tests give as in-memory fakes); without read models, the memory search is not served."""
    router = NatsRouter()
    settings = settings or read_section(SECTION, AssemblerSettings)
    index = deps.vectors
    if index is not None and settings.fault_file is not None:
        index = SwitchableIndex(index, settings.fault_file)  # end-to-end tests of degraded service only
    # One request's parts embed the same recent text: each vector is computed once per request (memo.py).
    embedder = MemoEmbedder(deps.embedder) if deps.embedder is not None else None
    # Reads kept until the log relays a change (gather/cache.py); every replica hears the changes itself.
    cache = LogCache(ttl_s=settings.cache_ttl_s) if settings.cache_ttl_s > 0 else None
    lore_loader = LoreLoader(
        deps.read_model(LORE),
        index=index,
        embedder=embedder,
        vector_settings=settings.lore_vector,
        scan_settings=settings.lore_scan,
        cache=cache,
        timed=TimedStates(deps.store, deps.read_model(LORE_TIMED), deps.saver, cache),
        # In memory (component tests) no documents are read: their read model has no fake.
        documents=DocumentLore(deps.read_model(DOCUMENTS), index, embedder, settings.documents, cache)
        if deps.serves(DOCUMENTS)
        else None,
    )
    recall = RecallReads.over(deps.read_models) if deps.read_models is not None else None
    # The configured LLM's tokenizer when named (read at start: a bad path fails here, not per request).
    counter = token_counter(settings.tokenizer_file)
    gatherer = Gatherer(
        reads or ReadModelReads.over(deps.require_read_models(), cache),
        index,
        embedder,
        settings,
        lore_loader,
        counter,
        # Stream mode: wait for this replica's shard to apply the writes acked before each request.
        catch_up=deps.vectors_caught_up,
        catch_up_s=deps.settings.vectors.read_wait_ms / 1000,
        # The memory API's memories, in the sections of their types (recall/remembered.py).
        memories=recall.memories if recall is not None else None,
    )

    limiter = RateLimiter(deps.settings.limits)
    meter, contexts = RpcMeter(subjects.CONTEXT_ASSEMBLE), ContextMeter()

    @router.subscriber(
        subjects.CONTEXT_ASSEMBLE,
        queue=subjects.queue_group(SERVICE),  # replicas share requests; each answered once
        # Without workers FastStream answers one request at a time; each waits mostly on I/O.
        max_workers=settings.max_workers,
        decoder=raw_body,
        title="context-assembler: mnemo.rpc.context.assemble.v1",
        description="Request ContextAssembleRequest; reply ContextAssembleReply or ErrorReply.",
    )
    async def on_context_assemble(body: bytes) -> ContextAssembleReply | ErrorReply:
        started = time.perf_counter()
        reply = await answer(body, gatherer, limiter)
        meter.answered(started, reply)
        contexts.observe(reply)
        return reply

    async def lore_test(request: LoreTestActivationRequest) -> LoreTestActivationReply:
        return await try_activation(lore_loader, request)

    serve(router, subjects.LORE_TEST_ACTIVATION, service=SERVICE, request=LoreTestActivationRequest,
          call=lore_test, errors={BookNotFound: "not_found"}, max_workers=settings.max_workers,
          limiter=limiter)  # fmt: skip
    nc = deps.nc  # the core's connection (none in component tests: no backlog, a missing item is just missing)
    statuses = IndexStatuses(index, counter, jetstream_backlog(nc.jetstream) if nc is not None else no_backlog)
    serve(router, subjects.MEMORY_INDEX_STATUS, service=SERVICE, request=MemoryIndexStatusRequest,
          call=statuses.answer, errors={NoVectorIndex: "unavailable"}, max_workers=settings.max_workers,
          limiter=limiter)  # fmt: skip
    if deps.usage_counts is not None:  # operators' usage report (admin only when secured)
        report = UsageReport(deps.usage_counts, deps.vectors)
        serve(router, subjects.OPS_USAGE, service=SERVICE, request=UsageRequest, call=report.answer,
              errors={ValueError: "bad_request"})  # fmt: skip
    if cache is not None:
        hear_changes(router, cache)
    if recall is not None:
        search = MemorySearch(index, deps.embedder, recall, settings)
        serve(
            router,
            subjects.MEMORY_SEARCH,
            service=SERVICE,
            request=MemorySearchRequest,
            call=search.search,
            errors={NamespaceRefused: "forbidden"},
            max_workers=settings.max_workers,
            limiter=limiter,
        )
    return router


def hear_changes(router: NatsRouter, cache: LogCache) -> None:
    """Every replica drops what it kept itself when the log relays a change (no queue group). ``no_reply``: the
    relay publishes to JetStream, so each event carries the inbox of its PubAck; a reply from here would reach
    that inbox first, an empty body the relay reads as a failed publish (and publishes again)."""
    for subject in INVALIDATING:
        title = f"context-assembler: {subject} (kept reads)"
        router.subscriber(subject, decoder=raw_body, no_reply=True, title=title)(_invalidator(cache))


def _invalidator(cache: LogCache) -> Callable[[bytes], Awaitable[None]]:
    async def on_change(body: bytes) -> None:
        on_relayed(cache, body)

    return on_change


DEFINITION = ServiceDefinition(
    SERVICE,
    create_router,
    vectors="read",
    embedder=True,
    read_models=(CONVERSATIONS, SUMMARIES, KNOWLEDGE, LEGACY_LORE, LORE, LORE_TIMED, DOCUMENTS, MEMORIES),
)
