"""The I/O half of context assembly: gather bot, persona, history, lore, knowledge, memories and retrieved messages.

Every part is fetched under its own deadline and every failure is caught, so a reply always comes: a part
that cannot be served is left out and named in ``degraded`` (the names: :meth:`Gatherer.gather`).

Deadlines: the whole gathering has ``deadline_s`` and each read-model query ``read_timeout_s``, whichever ends
first, so a slow MongoDB delays the reply by at most that; the search (embed + vector queries,
``search.py``) has ``retrieval_timeout_s`` of its own. A part that is late is given up, like a part that failed.

Per-character knowledge (``mnemo/shared/presence.py``): everything is read as the speaking bot (``bot_id``) may
know it: the reads (``reads.py``) and the vector filters (``search/filters.py``) both apply it, so a character
that was away when a secret was told finds the secret in no section. The other parts: ``port.py`` (the reads),
``search/`` (query, searches, hits, ranking), ``guess.py`` (the query embedded before the history is read),
``summarised.py`` (the summaries and legacy memories found, read back), ``as_of.py`` (a context as of a message).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from mnemo.services.context_assembler.assemble.assembly import AssemblyInput, reachable_history
from mnemo.services.context_assembler.gather.as_of import AsOf, picked
from mnemo.services.context_assembler.gather.bounded import within
from mnemo.services.context_assembler.gather.guess import QueryGuess
from mnemo.services.context_assembler.gather.memo import MemoEmbedder, request_scope
from mnemo.services.context_assembler.gather.personas import active_persona, label_personas
from mnemo.services.context_assembler.gather.port import ContextReads, FactsAsked, HistoryAsked
from mnemo.services.context_assembler.gather.retrieved import retrieved_lines
from mnemo.services.context_assembler.gather.summarised import FoundMemories, half_life
from mnemo.services.context_assembler.items import ChatLine, KnowledgeItem, LoreItem
from mnemo.services.context_assembler.lore.documents import Found as DocumentFound
from mnemo.services.context_assembler.lore.engine.compiled import ActiveBook
from mnemo.services.context_assembler.lore.loader import LoreLoader
from mnemo.services.context_assembler.lore.vectors import vector_query
from mnemo.services.context_assembler.recall.remembered import RememberedRecall
from mnemo.services.context_assembler.search.hits import (
    Hits,
    ranked_keys,
    relevant_first,
)
from mnemo.services.context_assembler.search.levers import RankLevers
from mnemo.services.context_assembler.search.query import query_text
from mnemo.services.context_assembler.search.rerank import NoRerank, Reranker
from mnemo.services.context_assembler.search.searches import VectorSearch
from mnemo.services.context_assembler.settings import AssemblerSettings
from mnemo.shared.embedders.port import Embedder
from mnemo.shared.readmodels.ports import MemoriesPort
from mnemo.shared.tokens import EstimatedTokens, TokenCounter
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import VectorIndex
from mnemo_client.wire.contract import ContextAssembleRequest

log = logging.getLogger(__name__)

T = TypeVar("T")
# When the request being gathered must be answered (event loop time); a read never waits past it.
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("assembler_deadline", default=None)
#: Read-your-writes in stream mode (``Deps.vectors_caught_up``): waits up to the given seconds for this
#: replica's shard to apply every vector write acked before the call; True when it has.
CatchUp = Callable[[float], Awaitable[bool]]


#: How many of the bot's current facts are read for the search to order: far above what one user's scope
#: holds (the extractor folds beyond 50 per user), so a relevant old fact is never cut before it is ranked.
#: ``facts_for`` decrypts every current fact anyway (supersession is computed on read), so this costs nothing.
KNOWLEDGE_POOL = 500


async def _nothing() -> list[ActiveBook]:
    return []


class Gatherer:
    """Gathers what one request's context is assembled from (:meth:`gather`); never fails a request."""

    def __init__(
        self,
        reads: ContextReads,
        index: VectorIndex | None,
        embedder: Embedder | None,
        settings: AssemblerSettings,
        lore: LoreLoader | None = None,
        counter: TokenCounter | None = None,
        reranker: Reranker | None = None,
        catch_up: CatchUp | None = None,
        catch_up_s: float = 0.2,
        memories: MemoriesPort | None = None,
    ) -> None:
        """``catch_up``: the stream mode's read-your-writes wait, given ``catch_up_s`` per request (0: none);
        ``memories``: the memory API's read model (None: no remembered memories in the context)."""
        self._catch_up = catch_up if catch_up_s > 0 else None
        self._catch_up_s = catch_up_s
        self._reads = reads
        self._reranker: Reranker = reranker or NoRerank()
        self._counter = counter or EstimatedTokens()
        self._lore = lore
        # Vectors are remembered per request (memo.py): the search and the lore embed the same recent text.
        self._embedder = embedder if embedder is None or isinstance(embedder, MemoEmbedder) else MemoEmbedder(embedder)
        self._remembered = RememberedRecall(memories, settings)
        self._search = VectorSearch(index, self._embedder, settings, remembered=self._remembered.wanted)
        self._settings = settings
        self._levers = RankLevers.of(settings)  # the ranking's, once (search/levers.py)
        self._found = FoundMemories(reads, self._read, settings)  # summaries and legacy memories read back
        self._guess = QueryGuess()  # the query embedding starts before the history is read (guess.py)

    async def _read(self, aw: Awaitable[T], part: str, degraded: list[str], default: T) -> T:
        """``aw`` within ``read_timeout_s`` and what is left of the request's deadline, in this task
        (``bounded.py``); on a failure or past either, ``default`` and ``part`` in ``degraded``. Past the
        deadline nothing more is read: the read is not even started."""
        timeout = self._settings.read_timeout_s
        deadline = _deadline.get()
        if deadline is not None:
            timeout = min(timeout, deadline - asyncio.get_running_loop().time())
        try:
            return await within(aw, timeout)
        except Exception as exc:  # a read model failure degrades that part, never the reply
            log.warning("context part %s unavailable: %s: %s", part, type(exc).__name__, exc)
            degraded.append(part)
            return default

    async def gather(self, req: ContextAssembleRequest) -> AssemblyInput:
        """Everything the assembly needs, within ``deadline_s`` (plus the retrieval's own deadline when the
        search starts late): each read model query is bounded by what is left of it.

        The parts named in ``degraded`` when they cannot be served:

        - ``bot_profile``: the bot is unknown or the bots read model failed (a neutral system text is used).
        - ``persona``: a persona was asked for (or is active) but is unknown, or its read failed.
        - ``history``: the messages read model failed.
        - ``embedder``: the query could not be embedded within the retrieval deadline (memories and
          retrieved are skipped).
        - ``vector_index``: the vector search failed or ran past the deadline.
        - ``vector_index_lag`` (stream mode): this replica's shard had not applied, within ``catch_up_s``, every
          vector write acked before the request came (or that could not be checked); the searches ran on it as
          it was. Without it, every event whose embedding was acked before the request is searchable.
        - ``memories`` / ``retrieved``: the search worked but the texts could not be read back.
        - ``lore``: the lorebooks read model failed (no lore); ``lore_vectors`` / ``lore_timed`` /
          ``lore_scan_budget``: see ``lore.py``.
        - ``knowledge`` / ``legacy_memories``: the facts or legacy-memory read model failed.
        - ``remembered``: the memory API's memories were found but could not be read back
          (``recall/remembered.py``).
        - ``persona_labels``: the names of the other personas in the history could not be read (their lines
          keep the platform's author name).

        ``lore:<uid>`` and ``knowledge:<fact_id>`` (or ``knowledge:+<n>``) are added by the budget
        (``budget.py``): a constant lore entry, or a fact of the bot related to the request, that did not fit.

        With ``as_of_message_id``, the context as of that message (``as_of.py``); a message the conversation
        does not hold raises :class:`UnknownMessage` (the handler's ``not_found``).
        """
        with request_scope():
            as_of = await picked(self._reads, req, self._settings.read_timeout_s)
            if as_of is not None and req.persona_id is None and as_of.persona_id is not None:
                req = req.model_copy(update={"persona_id": as_of.persona_id})  # who was playing then
            return await self._gather(req, as_of)

    async def _gather(self, req: ContextAssembleRequest, as_of: AsOf | None = None) -> AssemblyInput:
        """:meth:`gather` inside the request's memo (``memo.py``). What depends on nothing starts at once (the
        fork family, the facts, the timed lore state, the read-your-writes wait); the profiles, the history
        and the attached books are read together; then the search starts on the history while the lore is
        activated (it needs only the history window the lore leaves for its messages' part)."""
        degraded: list[str] = []
        s = self._settings
        loop = asyncio.get_running_loop()
        _deadline.set(loop.time() + s.deadline_s)
        # The other branches of this conversation's fork family: their summaries and facts stay out.
        branches = asyncio.ensure_future(self._other_branches(req, degraded))
        # The bot's facts depend on nothing else: read them while the rest is gathered and searched.
        knowing = asyncio.ensure_future(self._knowledge(req, branches, degraded, as_of))
        # Read-your-writes: the replica's shard catches up while the read models are read.
        fresh = asyncio.ensure_future(self._caught_up()) if self._catch_up is not None else None
        timed = asyncio.ensure_future(self._lore.timed_before(req, degraded, as_of)) if self._lore else None
        if isinstance(self._embedder, MemoEmbedder) and (guess := self._guess.guess(req)):
            self._embedder.start([guess])
        shown: asyncio.Future[list[str]] = loop.create_future()
        searching: asyncio.Future[Hits] | None = None
        documents: asyncio.Future[list[DocumentFound]] | None = None
        try:
            lore_books = self._read(self._lore.books(req), "lore", degraded, []) if self._lore else _nothing()
            bot, persona, history, books = await asyncio.gather(
                self._read(self._reads.bot(req.tenant_id, req.bot_id), "bot_profile", degraded, None),
                active_persona(self._reads, self._read, req, degraded),
                self._read(
                    self._reads.recent_messages(
                        HistoryAsked(
                            req.tenant_id,
                            req.user_id,
                            req.conversation_id,
                            req.bot_id,
                            s.history_limit,
                            until_index=as_of.index if as_of is not None else None,
                        )
                    ),
                    "history",
                    degraded,
                    [],
                ),
                lore_books,
            )
            if bot is None and "bot_profile" not in degraded:
                degraded.append("bot_profile")
            history = await label_personas(self._reads, self._read, req, history, persona, degraded)
            self._guess.learn(req, history)
            query = query_text(req, history)
            self._start_embedding(req, query, books, history)
            others = await branches
            if fresh is not None and not await fresh:
                degraded.append("vector_index_lag")
            # The remembered memories are searched with the rest (one batch: search/searches.py).
            searching = asyncio.ensure_future(self._search.run(req, query, shown, degraded, others, as_of))
            lore: list[LoreItem] = []
            if books and self._lore is not None:
                documents = asyncio.ensure_future(self._lore.documents_found(req, books, history, degraded))
                similar = await self._lore.similar(req, books, history, degraded)  # vector/hybrid entries
                lore = await self._lore.activate(
                    req,
                    books,
                    history,
                    bot=bot,
                    persona=persona,
                    similar=similar,
                    degraded=degraded,
                    before=timed,
                    record=as_of is None,  # a replay changes no timed state
                )
                lore += self._lore.document_items(await documents, lore)
            reachable = reachable_history(req.bot_id, bot, persona, history, req.max_tokens, lore, self._counter)
            shown.set_result([h.message_id for h in reachable])
            hits = await searching
            persona_id = req.persona_id or (persona.persona_id if persona else None)
            memories, legacy, retrieved, facts, remembered = await asyncio.gather(
                self._found.summaries(req, persona_id, hits.memories, degraded, others, as_of),
                self._found.legacy(req, hits.legacy, degraded, as_of),
                self._retrieved(req, hits, set(shown.result()), degraded, as_of),
                knowing,
                self._remembered.read(req, hits.remembered, degraded, half_life(self._settings, req), as_of),
            )
            found_facts = ranked_keys(hits.facts.points, vp.FACT_ID, s.knowledge_limit, hits.facts.cosine)
            knowledge = relevant_first(facts, found_facts, s.knowledge_limit, hits.searched)
            return AssemblyInput(
                bot_id=req.bot_id,
                bot=bot,
                persona=persona,
                memories=[*memories, *legacy],
                retrieved=retrieved,
                knowledge=knowledge,
                remembered=remembered,
                history=history,
                lore=lore,
                max_tokens=req.max_tokens,
                directive=s.knowledge_directive if req.knowledge_directive is None else req.knowledge_directive,
                min_history=s.min_history,
                degraded=degraded,
                counter=self._counter,
            )
        finally:
            # Only what the gathering left running because it failed before awaiting it.
            for task in (knowing, branches, fresh, timed, searching, documents):
                if task is not None:
                    task.cancel()

    def _start_embedding(
        self, req: ContextAssembleRequest, query: str, books: Sequence[ActiveBook], history: Sequence[ChatLine]
    ) -> None:
        """The search's query and, when an attached book has vector entries, the lore's recent text start
        embedding now, in one batch (one model run; the memo gives each part its vector when it asks)."""
        if not isinstance(self._embedder, MemoEmbedder) or not query.strip():
            return
        texts = [query]
        if self._lore is not None and self._lore.wants_vectors(req.tenant_id, books):
            texts.append(vector_query(history, req.user_message, self._lore.vector_settings.query_messages))
        self._embedder.start([t for t in texts if t.strip()])

    async def _caught_up(self) -> bool:
        """The read-your-writes wait, bounded by ``catch_up_s`` in all (a failed check counts as a lag)."""
        assert self._catch_up is not None
        try:
            async with asyncio.timeout(self._catch_up_s):
                return await self._catch_up(self._catch_up_s)
        except TimeoutError:
            return False
        except Exception as exc:
            log.warning("vector index lag unknown: %s: %s", type(exc).__name__, exc)
            return False

    async def _other_branches(self, req: ContextAssembleRequest, degraded: list[str]) -> frozenset[str]:
        """The other conversations of this one's fork family (docs/branches.md): what they learned is not this
        branch's. Unreadable, ``branches`` is named in ``degraded`` and none is excluded."""
        family = await self._read(
            self._reads.family(req.tenant_id, req.user_id, req.conversation_id), "branches", degraded, frozenset()
        )
        return family - {req.conversation_id}

    async def _retrieved(
        self, req: ContextAssembleRequest, hits: Hits, exclude: set[str], degraded: list[str], as_of: AsOf | None
    ) -> list[ChatLine]:
        """The retrieved messages, re-ranked (``retrieved.py``), read as the speaking bot may know them (with
        ``as_of``, none after it)."""

        async def read(ids: list[str]) -> list[ChatLine]:
            reading = self._reads.messages_by_ids(req.tenant_id, req.user_id, req.conversation_id, ids, req.bot_id)
            lines = await self._read(reading, "retrieved", degraded, [])
            return lines if as_of is None else [line for line in lines if as_of.holds_line(line)]

        return await retrieved_lines(
            req.user_message,
            hits.messages,
            exclude,
            read,
            self._settings.retrieved_limit,
            self._reranker,
            hits.second,
            self._levers,
        )

    async def _knowledge(
        self,
        req: ContextAssembleRequest,
        branches: Awaitable[frozenset[str]],
        degraded: list[str],
        as_of: AsOf | None = None,
    ) -> list[KnowledgeItem]:
        """ALL the bot's current facts visible here (newest first, up to ``KNOWLEDGE_POOL``): the search
        (``facts_filter``) may rank any of them among the ``knowledge_limit`` shown (``relevant_first``); none
        learned in another branch of the fork family (``branches``)."""
        if self._settings.knowledge_limit == 0:
            return []
        others = await branches
        return await self._read(
            self._reads.knowledge(
                FactsAsked(
                    req.tenant_id,
                    req.user_id,
                    req.bot_id,
                    max(KNOWLEDGE_POOL, self._settings.knowledge_limit),
                    req.campaign_id,
                    exclude_conversations=others,
                    learned_by=as_of.at if as_of is not None else None,
                )
            ),
            "knowledge",
            degraded,
            [],
        )
