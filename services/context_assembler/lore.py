"""Lore for the context: the books attached to the bot and the conversation, keyword-activated on the chat.

I/O is two read-model queries per request: the attachments with each book's version (no decryption), then
only the books this process has not cached at that version. Compiled lore (``shared.lore.compile_lore``) is
cached per (books at their versions, macros), so a request over unchanged books only scans text.

Scoping: attachments are looked up by target ids that start with the tenant (``bot/<tenant>/<bot>``,
``conversation/<tenant>/<user>/<conversation>``) and books by ids under the tenant, so another tenant, or a
bot the book is not attached to, never sees it; the caches are keyed by tenant too.

Activation (``activate_lore``, pure): SillyTavern's global defaults (scan depth 2, 25% of the context as the
World Info budget, ...) over the history window, oldest first, with the request's ``user_message`` as the
newest message. The probability seed is the conversation and turn, so a repeated request activates the same
entries. Timed effects (sticky, cooldown, delay) are evaluated on an empty state: their per-conversation
state is not persisted yet.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

from services.context_assembler.items import ChatLine, LoreItem
from shared.events.contract import ContextAssembleRequest
from shared.lore.activation import ActivatedEntry, ChatMessage, ScanRequest, activate
from shared.lore.compiled import ActiveBook, CompiledLore, compile_lore
from shared.lore.model import Lorebook, WorldInfoSettings
from shared.readmodels.lore import LorebookRef, LorebookView

K = TypeVar("K")
V = TypeVar("V")


class LoreReads(Protocol):
    """Implemented by ``shared.readmodels.lore.LoreReadModel``."""

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

    def __init__(self, reads: LoreReads, settings: WorldInfoSettings | None = None, cache_size: int = 256) -> None:
        self._reads = reads
        self.settings = settings or WorldInfoSettings()
        self._books: _Lru[tuple[str, str, int], Lorebook] = _Lru(cache_size)
        self._compiled: _Lru[tuple[object, ...], CompiledLore] = _Lru(cache_size)

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

    def compiled(self, tenant_id: str, books: Sequence[ActiveBook], macros: Mapping[str, str]) -> CompiledLore:
        key = (tenant_id, tuple((b.book_id, b.source) for b in books), tuple(sorted(macros.items())))
        lore = self._compiled.get_fresh(key)
        if lore is None:
            lore = compile_lore(books, self.settings, macros)
            self._compiled.put(key, lore)
        return lore


def activate_lore(
    lore: CompiledLore,
    history: Sequence[ChatLine],
    user_message: str,
    *,
    max_tokens: int,
    seed: str,
    user_name: str = "User",
    character: str | None = None,
) -> list[LoreItem]:
    """The placed activated entries, in insertion order (pure)."""
    messages = [ChatMessage(h.author_name or h.role, h.content) for h in history]
    if user_message.strip():
        messages.append(ChatMessage(user_name, user_message))
    result = activate(lore, ScanRequest(messages=messages, max_context=max_tokens, seed=seed, character=character))
    return [_item(e) for e in result.entries if e.placed]


def _item(e: ActivatedEntry) -> LoreItem:
    book_id = e.book_id.split("@", 1)[0]  # compiled under "<book>@<version>", see LoreLoader.books
    return LoreItem(book_id, e.entry.uid, e.content, why_text(e), float(e.entry.order), e.entry.constant)


def why_text(e: ActivatedEntry) -> str:
    """``key: <key>`` (plus the secondary keys that matched), or the reason (``constant``, ``sticky``, ...)."""
    why = e.why
    if why.kind == "key":
        secondary = f" (secondary: {', '.join(why.secondary)})" if why.secondary else ""
        return f"key: {why.key}{secondary}"
    return why.kind
