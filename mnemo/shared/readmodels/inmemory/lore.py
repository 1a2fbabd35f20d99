"""In-memory fakes of the legacy lore and lorebooks read models (``ports.LegacyLorePort``, ``ports.LorePort``)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from mnemo.shared.aggregates.conversation import as_utc
from mnemo.shared.aggregates.lorebook import LORE_EVENTS, BookState, fold_all
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    LEGACY_LORE_CREATED,
    LEGACY_LORE_DELETED,
    bot_stream,
    conversation_stream,
)
from mnemo.shared.lore.model import Lorebook
from mnemo.shared.mapping import mapped
from mnemo.shared.readmodels.dispatch import apply_each
from mnemo.shared.readmodels.legacy_lore import LegacyLoreView, LegacyPage, LegacyPages
from mnemo.shared.readmodels.lore import BookListing, LorebookRef, LorebookView, LoreSource


class InMemoryLegacyLore(LegacyPages):
    """``LegacyLoreReadModel`` in memory (port: ``LegacyLorePort``)."""

    def __init__(self) -> None:
        self.entries: dict[str, tuple[LegacyLoreView, bool]] = {}  # legacy id -> (view, deleted)

    async def apply(self, events: Sequence[EventEnvelope]) -> None:
        apply_each(self, events, _LEGACY_APPLY)

    def _on_created(self, env: EventEnvelope) -> None:
        c = LEGACY_LORE_CREATED.parse(env.payload)
        if c.legacy_id in self.entries:
            return
        view = mapped(LegacyLoreView, c, tenant_id=env.tenant_id, start_at=as_utc(c.start_at), end_at=as_utc(c.end_at))
        self.entries[c.legacy_id] = (view, False)

    def _on_deleted(self, env: EventEnvelope) -> None:
        d = LEGACY_LORE_DELETED.parse(env.payload)
        found = self.entries.get(d.legacy_id)
        if found is not None and found[0].tenant_id == env.tenant_id:
            self.entries[d.legacy_id] = (replace(found[0], title=None, text="", emotional_tags=()), True)

    def _live(self, tenant_id: str, user_id: str | None) -> list[LegacyLoreView]:
        return [
            v
            for v, deleted in self.entries.values()
            if not deleted and v.tenant_id == tenant_id and (user_id is None or v.user_id == user_id)
        ]

    async def by_ids(self, tenant_id: str, ids: Sequence[str], *, user_id: str) -> list[LegacyLoreView]:
        found = {v.legacy_id: v for v in self._live(tenant_id, user_id)}
        return [found[i] for i in ids if i in found]

    async def for_memories(
        self, tenant_id: str, memory_ids: Sequence[str], *, user_id: str | None = None
    ) -> dict[str, LegacyLoreView]:
        return {v.memory_id: v for v in self._live(tenant_id, user_id) if v.memory_id in memory_ids}

    async def deleted(self, tenant_id: str, legacy_ids: Sequence[str]) -> set[str]:
        return {
            i
            for i in legacy_ids
            if (found := self.entries.get(i)) is not None and found[1] and found[0].tenant_id == tenant_id
        }

    async def converted_memory_ids(self, tenant_id: str, user_id: str) -> list[str]:
        return [v.memory_id for v in self._live(tenant_id, user_id)]

    async def listed(self, q: LegacyPage, offset: int, limit: int) -> tuple[list[LegacyLoreView], int]:
        found = [v for v in self._live(q.tenant_id, q.user_id) if q.admits(v)]
        total = len(found)
        if limit <= 0 or offset >= total:
            return [], total
        found.sort(key=lambda v: v.legacy_id)
        found.sort(key=lambda v: v.end_at, reverse=True)
        return found[offset : offset + limit], total


# Event type -> how ``InMemoryLegacyLore.apply`` folds it (the rules of ``legacy_lore.LegacyLoreReadModel``).
_LEGACY_APPLY: dict[str, Callable[[InMemoryLegacyLore, EventEnvelope], None]] = {
    LEGACY_LORE_CREATED.name: InMemoryLegacyLore._on_created,
    LEGACY_LORE_DELETED.name: InMemoryLegacyLore._on_deleted,
}


# --- lorebooks ------------------------------------------------------------------------------------------
class InMemoryLore:
    """``LoreReadModel`` in memory (port: ``LorePort``)."""

    def __init__(self) -> None:
        self.books: dict[tuple[str, str], BookState] = {}  # (tenant, book) -> folded state
        self.attachments: dict[tuple[str, str], set[str]] = {}  # (tenant, book) -> target stream ids

    async def apply(self, envelopes: Iterable[EventEnvelope]) -> None:
        by_book: dict[tuple[str, str], list[EventEnvelope]] = {}
        for env in envelopes:
            if env.type in LORE_EVENTS:
                by_book.setdefault((env.tenant_id, str(env.payload["lorebook_id"])), []).append(env)
        for key, events in by_book.items():
            first = min(e.version for e in events)
            base = None if first == 1 else await self.state(*key)
            state = fold_all(base, events)
            if state is None or (base is not None and state.version <= base.version):
                continue
            stored = self.books.get(key)
            if stored is not None and stored.version > state.version:
                continue
            self.books[key] = _copy_state(state)
            self.attachments[key] = set(state.targets)

    async def state(self, tenant_id: str, lorebook_id: str) -> BookState | None:
        found = self.books.get((tenant_id, lorebook_id))
        return None if found is None else _copy_state(found)

    async def book(self, tenant_id: str, lorebook_id: str) -> LorebookView | None:
        return (await self.books_by_ids(tenant_id, [lorebook_id])).get(lorebook_id)

    async def books_by_ids(self, tenant_id: str, lorebook_ids: Sequence[str]) -> dict[str, LorebookView]:
        out: dict[str, LorebookView] = {}
        for b in dict.fromkeys(lorebook_ids):
            s = self.books.get((tenant_id, b))
            if s is not None and not s.deleted:
                copied = _copy_state(s)
                out[b] = LorebookView(
                    tenant_id=s.tenant_id,
                    lorebook_id=s.lorebook_id,
                    owner_user_id=s.owner_user_id,
                    name=s.name,
                    format=s.format or "",
                    version=s.version,
                    book=copied.book,
                    original=copied.original or {},
                )
        return out

    async def list_books(self, tenant_id: str, owner_user_id: str | None = None) -> list[BookListing]:
        found = [
            BookListing.of(s)
            for (tenant, _), s in self.books.items()
            if tenant == tenant_id and not s.deleted and owner_user_id in (None, s.owner_user_id)
        ]
        return sorted(found, key=lambda b: (b.name, b.lorebook_id))

    async def attached(
        self, tenant_id: str, bot_id: str, user_id: str | None = None, conversation_id: str | None = None
    ) -> list[LorebookRef]:
        bot_target = bot_stream(tenant_id, bot_id)
        chat_target = (
            conversation_stream(tenant_id, user_id, conversation_id)
            if user_id is not None and conversation_id is not None
            else None
        )
        sources: dict[str, LoreSource] = {}
        for (tenant, book), targets in self.attachments.items():
            if tenant != tenant_id:
                continue
            if chat_target is not None and chat_target in targets:
                sources[book] = "chat"
            elif bot_target in targets:
                sources[book] = "character"
        return [
            LorebookRef(b, s.version, src)
            for b, src in sorted(sources.items())
            if (s := self.books.get((tenant_id, b))) is not None and not s.deleted
        ]


def _copy_state(s: BookState) -> BookState:
    """A stored state as the adapter reads it back: its own book and original, through their JSON form."""
    return replace(
        s,
        book=Lorebook.model_validate(s.book.model_dump(mode="json")),
        original=copy.deepcopy(s.original),
        targets=list(s.targets),
    )
