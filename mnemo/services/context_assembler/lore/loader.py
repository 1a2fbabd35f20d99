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
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

from mnemo.services.context_assembler.items import BotProfile, ChatLine, LoreItem, PersonaProfile
from mnemo.services.context_assembler.lore.activate import activate_lore_state, scan_texts, unversioned, versioned
from mnemo.services.context_assembler.lore.documents import DocumentLore
from mnemo.services.context_assembler.lore.engine.compiled import ActiveBook, CompiledLore, compile_lore
from mnemo.services.context_assembler.lore.engine.scan_types import ScanBudgetExceeded
from mnemo.services.context_assembler.lore.scans import ScanPool, ScanRefused
from mnemo.services.context_assembler.lore.timed import EMPTY as EMPTY_TIMED
from mnemo.services.context_assembler.lore.timed import TimedStates
from mnemo.services.context_assembler.lore.vectors import best_entries, has_vector_entries, vector_query
from mnemo.services.context_assembler.settings import LoreScanSettings, LoreVectorSettings
from mnemo.shared.embedders.port import Embedder
from mnemo.shared.lore.model import Lorebook, WorldInfoSettings
from mnemo.shared.readmodels.lore import LorebookRef, LorebookView
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import VectorIndex
from mnemo_client.wire.contract import ContextAssembleRequest

log = logging.getLogger(__name__)
TIMED_TIMEOUT_S = 1.0  # each of the timed state's read and write (a read-model lookup, one append)


K = TypeVar("K")
V = TypeVar("V")


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
    ) -> None:
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
        self._compiled: _Lru[tuple[object, ...], CompiledLore] = _Lru(cache_size)
        self._vectorized: _Lru[tuple[str, str], bool] = _Lru(cache_size)  # (tenant, book@version) -> any?

    async def books(self, req: ContextAssembleRequest) -> list[ActiveBook]:
        refs = await self._reads.attached(req.tenant_id, req.bot_id, req.user_id, req.conversation_id)
        missing = [r.lorebook_id for r in refs if (req.tenant_id, r.lorebook_id, r.version) not in self._books]
        versions = {r.lorebook_id: r.version for r in refs}
        if missing:
            for view in (await self._reads.books_by_ids(req.tenant_id, missing)).values():
                self._books.put((req.tenant_id, view.lorebook_id, view.version), view.book)
                versions[view.lorebook_id] = view.version  # changed since the attachment lookup: take the newer
        out = []
        for ref in refs:
            book = self._books.get_fresh((req.tenant_id, ref.lorebook_id, versions[ref.lorebook_id]))
            if book is not None:
                out.append(ActiveBook(f"{ref.lorebook_id}@{versions[ref.lorebook_id]}", book, ref.source))
        return out

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
    ) -> list[LoreItem]:
        """Activate the books on the chat with the conversation's timed effects, and record the new ones.

        The chat's length is the newest history message's index + 1 (+ 1 for ``user_message``). The timed
        state is read and written under ``timed_timeout_s``; if either fails, the scan runs on an empty
        state or its state is not kept, and ``lore_timed`` is named in ``degraded``. The scan runs off the
        event loop within its budget (``lore_scans.py``); past it the request gets no keyword lore and
        ``lore_scan_budget`` is named in ``degraded``.
        """
        macros = {"char": bot.name if bot else req.bot_id, "user": persona.name if persona else "User"}
        turn = history[-1].index + 1 if history else 0
        count = turn + (1 if req.user_message.strip() else 0)
        before = EMPTY_TIMED
        if self._timed is not None:
            try:
                before = await asyncio.wait_for(self._timed.load(req), self.timed_timeout_s)
            except Exception as exc:  # the lore still comes, as on a fresh chat
                log.warning("timed lore state unavailable: %s: %s", type(exc).__name__, exc)
                degraded.append("lore_timed")
        scan = functools.partial(
            activate_lore_state,
            self.compiled(req.tenant_id, books, macros),
            history,
            req.user_message,
            max_tokens=req.max_tokens,
            seed=f"{req.conversation_id}:{turn}",
            user_name=macros["user"],
            character=macros["char"],
            similar=similar,
            timed=versioned(before.state, books),
            message_count=count,
            scan_data=scan_texts(bot, persona),
        )
        try:
            activation = await self._scans.run(req.tenant_id, lambda deadline: scan(deadline=deadline))
        except (ScanRefused, ScanBudgetExceeded) as exc:  # the reply comes on time, without keyword lore
            log.warning("lore scan refused for tenant %s: %s", req.tenant_id, exc)
            degraded.append("lore_scan_budget")
            return []
        if self._timed is not None and "lore_timed" not in degraded:
            try:
                after = unversioned(activation.timed)
                await asyncio.wait_for(self._timed.save(req, before, after, count), self.timed_timeout_s)
            except Exception as exc:  # the context is built; only the effects' next turn is at stake
                log.warning("timed lore state not recorded: %s: %s", type(exc).__name__, exc)
                degraded.append("lore_timed")
        return activation.items

    async def document_items(
        self,
        req: ContextAssembleRequest,
        books: Sequence[ActiveBook],
        history: Sequence[ChatLine],
        entries: Sequence[LoreItem],
        degraded: list[str],
    ) -> list[LoreItem]:
        """The attached documents' best chunks (``document_lore.py``), none without documents."""
        if self.documents is None:
            return []
        return await self.documents.items(req, books, history, entries, degraded)

    def compiled(self, tenant_id: str, books: Sequence[ActiveBook], macros: Mapping[str, str]) -> CompiledLore:
        key = (tenant_id, tuple((b.book_id, b.source) for b in books), tuple(sorted(macros.items())))
        lore = self._compiled.get_fresh(key)
        if lore is None:
            lore = compile_lore(books, self.settings, macros)
            self._compiled.put(key, lore)
        return lore

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
        vs = self.vector_settings
        eligible = [b for b in books if self._has_vector_entries(req.tenant_id, b)]
        text = vector_query(history, req.user_message, vs.query_messages)
        index, embedder = self._index, self._embedder
        if not eligible or not text.strip() or vs.max_entries == 0 or index is None or embedder is None:
            return {}
        try:
            search = self._search(index, embedder, req.tenant_id, eligible, text)
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
        points = await index.search(vector, flt, limit=vs.max_entries * 4, score_threshold=vs.threshold)
        return best_entries(points, compiled_ids, vs.max_entries, vs.threshold)
