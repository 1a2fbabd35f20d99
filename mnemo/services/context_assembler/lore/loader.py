"""Lore for the context: the books attached to the bot and the conversation, keyword-activated on the chat.

I/O is two read-model queries per request: the attachments with each book's version (no decryption), then
only the books this process has not cached at that version. Compiled lore (``activation.compiled.compile_lore``) is
cached per (books at their versions, macros), so a request over unchanged books only scans text.

Scoping: attachments are looked up by target ids that start with the tenant (``bot/<tenant>/<bot>``,
``conversation/<tenant>/<user>/<conversation>``) and books by ids under the tenant, so another tenant, or a
bot the book is not attached to, never sees it; the caches are keyed by tenant too.

Activation (``lore_activation.py``, pure) follows SillyTavern's global defaults over the history window;
timed effects (sticky, cooldown, delay) use the conversation's stored state (``timed.py``). Vector activation
(:meth:`LoreLoader.similar`, ``lore_vectors.py``) forces the entries whose ``lore_entry`` points are close
to the chat. Uploaded documents' chunks join the activated entries (``document_lore.py``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol, TypeVar

from mnemo.services.context_assembler.gather.as_of import AsOf
from mnemo.services.context_assembler.gather.cache import LogCache, cached, tenant_topic
from mnemo.services.context_assembler.gather.invalidations import lore_topic
from mnemo.services.context_assembler.items import BotProfile, ChatLine, LoreItem, PersonaProfile
from mnemo.services.context_assembler.lore.activate import activate_lore_state, scan_texts, unversioned, versioned
from mnemo.services.context_assembler.lore.documents import DocumentLore
from mnemo.services.context_assembler.lore.documents import Found as DocumentFound
from mnemo.services.context_assembler.lore.engine.compiled import ActiveBook, CompiledLore, compile_lore
from mnemo.services.context_assembler.lore.engine.scan_types import ScanBudgetExceeded
from mnemo.services.context_assembler.lore.scans import ScanPool, ScanRefused
from mnemo.services.context_assembler.lore.timed import EMPTY as EMPTY_TIMED
from mnemo.services.context_assembler.lore.timed import TimedStates, TimedView
from mnemo.services.context_assembler.lore.vectors import best_entries, has_vector_entries, vector_query
from mnemo.services.context_assembler.settings import LoreScanSettings, LoreVectorSettings
from mnemo.shared.embedders.port import Embedder
from mnemo.shared.lore.model import Lorebook, WorldInfoSettings
from mnemo.shared.readmodels.lore import LorebookRef, LorebookView
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import VectorIndex, VectorQuery
from mnemo_client.wire.contract import ContextAssembleRequest

log = logging.getLogger(__name__)
TIMED_TIMEOUT_S = 1.0  # each of the timed state's read and write (a read-model lookup, one append)


K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


class LoreReads(Protocol):
    """Implemented by ``mnemo.shared.readmodels.lore.LoreReadModel``."""

    async def attached(
        self, tenant_id: str, bot_id: str, user_id: str | None = None, conversation_id: str | None = None
    ) -> list[LorebookRef]: ...

    async def books_by_ids(self, tenant_id: str, lorebook_ids: Sequence[str]) -> dict[str, LorebookView]: ...


class _Lru(OrderedDict[K, V]):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def get_fresh(self, key: K) -> V | None:
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


def _retrieve(task: asyncio.Future[CompiledLore]) -> None:
    """A compilation nobody waited for to the end must not log "exception was never retrieved"."""
    if not task.cancelled() and task.exception() is not None:
        log.warning("lore compilation failed: %s", task.exception())


class LoreLoader:
    """Loads the active books of a request and compiles them, caching both per book version."""

    def __init__(
        self,
        reads: LoreReads,
        settings: WorldInfoSettings | None = None,
        cache_size: int = 256,
        *,
        index: VectorIndex | None = None,
        embedder: Embedder | None = None,
        vector_settings: LoreVectorSettings | None = None,
        timed: TimedStates | None = None,
        scan_settings: LoreScanSettings | None = None,
        documents: DocumentLore | None = None,
        cache: LogCache | None = None,
    ) -> None:
        """``cache``: the attachments (and their versions) are kept until a lorebook event of the tenant."""
        self.cache = cache
        self._reads = reads
        self._scans = ScanPool(scan_settings)
        self.documents = documents
        self._timed = timed
        self._index = index
        self._embedder = embedder
        self.vector_settings = vector_settings or LoreVectorSettings()
        self.settings = settings or WorldInfoSettings()
        self.timed_timeout_s = TIMED_TIMEOUT_S
        self._books: _Lru[tuple[str, str, int], Lorebook] = _Lru(cache_size)
        self._compiled: _Lru[tuple[object, ...], asyncio.Future[CompiledLore]] = _Lru(cache_size)
        self._vectorized: _Lru[tuple[str, str], bool] = _Lru(cache_size)  # (tenant, book@version) -> any?

    async def books(self, req: ContextAssembleRequest) -> list[ActiveBook]:
        return await self.attached_books(req.tenant_id, req.bot_id, req.user_id, req.conversation_id)

    async def attached_books(
        self, tenant_id: str, bot_id: str, user_id: str | None, conversation_id: str | None
    ) -> list[ActiveBook]:
        """The books attached to the bot and (when named) the conversation, at their current versions."""
        t = tenant_id
        refs = await cached(
            self.cache,
            ("attached", t, bot_id, user_id, conversation_id),
            (lore_topic(t), tenant_topic(t)),
            lambda: self._reads.attached(t, bot_id, user_id, conversation_id),
        )
        missing = [r.lorebook_id for r in refs if (tenant_id, r.lorebook_id, r.version) not in self._books]
        versions = {r.lorebook_id: r.version for r in refs}
        if missing:
            for view in (await self._reads.books_by_ids(tenant_id, missing)).values():
                self._books.put((tenant_id, view.lorebook_id, view.version), view.book)
                versions[view.lorebook_id] = view.version  # changed since the attachment lookup: take the newer
        out = []
        for ref in refs:
            book = self._books.get_fresh((tenant_id, ref.lorebook_id, versions[ref.lorebook_id]))
            if book is not None:
                out.append(ActiveBook(f"{ref.lorebook_id}@{versions[ref.lorebook_id]}", book, ref.source))
        return out

    async def timed_before(
        self, req: ContextAssembleRequest, degraded: list[str], as_of: AsOf | None = None
    ) -> TimedView:
        """The conversation's timed effects before this request's scan (read under ``timed_timeout_s``); on a
        failure the empty state, and ``lore_timed`` in ``degraded`` (the lore still comes, as on a fresh chat).
        The gatherer starts it with the request's first reads: it depends on nothing else. With ``as_of``, the
        effects as the log recorded them before that turn (``TimedStates.before_turn``)."""
        if self._timed is None:
            return EMPTY_TIMED
        try:
            async with asyncio.timeout(self.timed_timeout_s):  # in this task: no task of its own per request
                if as_of is not None:
                    count = as_of.index + 1 + (1 if req.user_message.strip() else 0)
                    return await self._timed.before_turn(req, count)
                return await self._timed.load(req)
        except Exception as exc:
            log.warning("timed lore state unavailable: %s: %s", type(exc).__name__, exc)
            degraded.append("lore_timed")
            return EMPTY_TIMED

    async def named_books(self, tenant_id: str, lorebook_ids: Sequence[str]) -> dict[str, ActiveBook]:
        """The tenant's books with these ids as they are now, by id (another tenant's ids find nothing); each
        takes part as character lore, as if attached to the bot."""
        views = await self._reads.books_by_ids(tenant_id, list(dict.fromkeys(lorebook_ids)))
        return {v.lorebook_id: ActiveBook(f"{v.lorebook_id}@{v.version}", v.book) for v in views.values()}

    async def scan(self, tenant_id: str, run: Callable[[float], T]) -> T:
        """``run(deadline)`` off the event loop within the tenant's scan budget (``scans.py``)."""
        return await self._scans.run(tenant_id, run)

    async def activate(
        self,
        req: ContextAssembleRequest,
        books: Sequence[ActiveBook],
        history: Sequence[ChatLine],
        *,
        bot: BotProfile | None,
        persona: PersonaProfile | None,
        similar: Mapping[str, float],
        degraded: list[str],
        before: Awaitable[TimedView] | None = None,
        record: bool = True,
    ) -> list[LoreItem]:
        """Activate the books on the chat with the conversation's timed effects, and record the new ones
        (unless ``record`` is False: a context as of an earlier message changes nothing).

        The chat's length is the newest history message's index + 1 (+ 1 for ``user_message``). The timed
        state is read (``before``, or :meth:`timed_before` now) and written under ``timed_timeout_s``; if
        either fails, the scan runs on an empty state or its state is not kept, and ``lore_timed`` is named
        in ``degraded``. The books are compiled once per version on a worker, and the scan runs inline when
        short, else on a worker, within its budget (``scans.py``); past it the request gets no keyword lore
        and ``lore_scan_budget`` is named in ``degraded``.
        """
        macros = {"char": bot.name if bot else req.bot_id, "user": persona.name if persona else "User"}
        turn = history[-1].index + 1 if history else 0
        count = turn + (1 if req.user_message.strip() else 0)
        loaded = await (before if before is not None else self.timed_before(req, degraded))
        texts = scan_texts(bot, persona)
        try:
            key, lore = await self.compiled_keyed(req.tenant_id, books, macros)
            scan = functools.partial(
                activate_lore_state,
                lore,
                history,
                req.user_message,
                max_tokens=req.max_tokens,
                seed=f"{req.conversation_id}:{turn}",
                user_name=macros["user"],
                character=macros["char"],
                similar=similar,
                timed=versioned(loaded.state, books),
                message_count=count,
                scan_data=texts,
            )
            chars = len(req.user_message) + sum(len(h.content) for h in history) + sum(map(len, texts.values()))
            activation = await self._scans.first_inline(
                req.tenant_id, key, chars, lambda deadline, clock: scan(deadline=deadline, clock=clock)
            )
        except (ScanRefused, ScanBudgetExceeded, TimeoutError) as exc:  # the reply comes on time, without keyword lore
            log.warning("lore scan refused for tenant %s: %s", req.tenant_id, exc)
            degraded.append("lore_scan_budget")
            return []
        if record and self._timed is not None and "lore_timed" not in degraded:
            try:
                after = unversioned(activation.timed)
                # Most scans change no timed effect: nothing to record, and no task and wait that would hand
                # the loop to the other parts' work while this request waits on it (issue 26).
                if after != loaded.state:
                    await asyncio.wait_for(self._timed.save(req, loaded, after, count), self.timed_timeout_s)
            except Exception as exc:  # the context is built; only the effects' next turn is at stake
                log.warning("timed lore state not recorded: %s: %s", type(exc).__name__, exc)
                degraded.append("lore_timed")
        return activation.items

    async def documents_found(
        self,
        req: ContextAssembleRequest,
        books: Sequence[ActiveBook],
        history: Sequence[ChatLine],
        degraded: list[str],
    ) -> list[DocumentFound]:
        """The attached documents' chunks the search finds (``documents.py``), none without documents; they
        become lore items with :meth:`document_items` once the entries are activated."""
        if self.documents is None:
            return []
        return await self.documents.found(req, books, history, degraded)

    def document_items(self, found: Sequence[DocumentFound], entries: Sequence[LoreItem]) -> list[LoreItem]:
        """The best found chunks that do not repeat an activated entry."""
        return self.documents.pick(found, entries) if self.documents is not None else []

    def wants_vectors(self, tenant_id: str, books: Sequence[ActiveBook]) -> bool:
        """Whether :meth:`similar` will embed the recent text (an attached book has vector entries)."""
        vs = self.vector_settings
        usable = vs.max_entries > 0 and self._index is not None and self._embedder is not None
        return usable and any(self._has_vector_entries(tenant_id, b) for b in books)

    async def compiled(self, tenant_id: str, books: Sequence[ActiveBook], macros: Mapping[str, str]) -> CompiledLore:
        """The books compiled with these macro values: once per (books at their versions, macros), on a worker
        (``ScanPool.compile``), shared by the requests that wait for it meanwhile."""
        return (await self.compiled_keyed(tenant_id, books, macros))[1]

    async def compiled_keyed(
        self, tenant_id: str, books: Sequence[ActiveBook], macros: Mapping[str, str]
    ) -> tuple[tuple[object, ...], CompiledLore]:
        """:meth:`compiled` and its cache key. Waits at most the scan budget: past it ``TimeoutError`` (the
        compilation goes on, and the next request finds it done)."""
        key = (tenant_id, tuple((b.book_id, b.source) for b in books), tuple(sorted(macros.items())))
        task = self._compiled.get_fresh(key)
        if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):
            build = functools.partial(compile_lore, list(books), self.settings, dict(macros))
            task = asyncio.ensure_future(self._scans.compile(tenant_id, build))
            task.add_done_callback(_retrieve)
            self._compiled.put(key, task)
        if task.done():
            return key, task.result()
        return key, await asyncio.wait_for(asyncio.shield(task), self._scans.settings.budget_s)

    async def similar(
        self, req: ContextAssembleRequest, books: Sequence[ActiveBook], history: Sequence[ChatLine], degraded: list[str]
    ) -> dict[str, float]:
        """Vector activation: engine ident (``<book>@<version>.<uid>``) -> cosine of the entries to force.

        When an attached book has enabled entries in ``vector`` or ``hybrid`` mode, the last ``query_messages``
        messages plus the ``user_message`` (newest first) are embedded and searched among the ``lore_entry``
        points (written by the embedding service) with the tenant and the attached books' ids INSIDE the vector
        query (``mnemo.shared.vectors.points.lore_books``); hits with a cosine of at least ``threshold`` (best chunk
        per entry, the ``max_entries`` best entries) are force-activated in the engine, which then applies
        every non-keyword rule, the budget and the order exactly as for keyword hits. Their source ``detail``
        is ``similarity: 0.71``. A failed or slow embed/search degrades to keyword-only lore and names
        ``lore_vectors`` in ``degraded``.
        """
        return await self.similar_to(req.tenant_id, req.user_message, books, history, degraded)

    async def similar_to(
        self,
        tenant_id: str,
        user_message: str,
        books: Sequence[ActiveBook],
        history: Sequence[ChatLine],
        degraded: list[str],
    ) -> dict[str, float]:
        """:meth:`similar` for a tenant and a message outside an assemble request (the activation test)."""
        vs = self.vector_settings
        eligible = [b for b in books if self._has_vector_entries(tenant_id, b)]
        text = vector_query(history, user_message, vs.query_messages)
        index, embedder = self._index, self._embedder
        if not eligible or not text.strip() or vs.max_entries == 0 or index is None or embedder is None:
            return {}
        try:
            search = self._search(index, embedder, tenant_id, eligible, text)
            return await asyncio.wait_for(search, vs.timeout_s)
        except Exception as exc:  # lore falls back to keywords only; the reply still comes
            log.warning("lore vector activation unavailable: %s: %s", type(exc).__name__, exc)
            degraded.append("lore_vectors")
            return {}

    def _has_vector_entries(self, tenant_id: str, book: ActiveBook) -> bool:
        key = (tenant_id, book.book_id)  # the compiled id carries the version, so an edit is a new key
        found = self._vectorized.get_fresh(key)
        if found is None:
            found = has_vector_entries(book.book)
            self._vectorized.put(key, found)
        return found

    async def _search(
        self, index: VectorIndex, embedder: Embedder, tenant_id: str, books: Sequence[ActiveBook], text: str
    ) -> dict[str, float]:
        vs = self.vector_settings
        compiled_ids = {b.book_id.split("@", 1)[0]: b.book_id for b in books}
        [vector] = await embedder.embed([text])
        flt = vp.lore_books(tenant_id, compiled_ids)
        points = await index.search(VectorQuery.dense(vector, flt, vs.max_entries * 4, vs.threshold))
        return best_entries(points, compiled_ids, vs.max_entries, vs.threshold)
