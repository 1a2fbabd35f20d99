"""Ports of the shared read models: what services call on them, as ``Protocol``s.

Each has two adapters passing one contract suite (``tests/contract/test_readmodels_contract.py``): the
MongoDB projection (``repository.py``, ``summaries.py``, ``knowledge.py``, ``legacy_lore.py``, ``lore.py``)
and an in-memory fake (``inmemory/``) for component tests that need no server; the projection catalog
(``catalog.py``) names both for each read model. The ports hold the projection (``apply``) and the queries
services make; indexes and dropping before a replay are the catalog's (the collections it declares).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from mnemo.shared.aggregates.conversation import ConversationState
from mnemo.shared.aggregates.lorebook import BookState
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.readmodels.knowledge import FactQueries, FactView
from mnemo.shared.readmodels.legacy_lore import LegacyLoreView, LegacyPages
from mnemo.shared.readmodels.lore import BookListing, LorebookRef, LorebookView
from mnemo.shared.readmodels.memories import MemoryListing, MemoryView
from mnemo.shared.readmodels.message_reads import MessageReads
from mnemo.shared.readmodels.messages import MessageKey, MessageStatus
from mnemo.shared.readmodels.profiles import BotView, PersonaView
from mnemo.shared.readmodels.summaries import SummaryPages, SummaryView


class ConversationReadModel(MessageReads, Protocol):
    """Conversations, messages, bots and personas (``ReadModels``); ``message_range``, ``recent`` and
    ``by_ids`` are ``MessageReads``."""

    async def apply(
        self, envelopes: Iterable[EventEnvelope], *, known_states: Mapping[str, ConversationState] | None = None
    ) -> dict[str, ConversationState]: ...

    async def conversation_states(self, stream_ids: Sequence[str]) -> dict[str, ConversationState]: ...

    async def conversation(self, tenant_id: str, user_id: str, conversation_id: str) -> ConversationState | None: ...

    async def listing(
        self, tenant_id: str, user_id: str | None, *, limit: int, offset: int = 0
    ) -> tuple[list[ConversationState], int]:
        """One page of the tenant's (one user's) conversations, latest message first, and how many there are."""
        ...

    async def family(
        self, tenant_id: str, user_id: str, conversation_id: str, *, root: str | None = None
    ) -> frozenset[str]:
        """The conversations of ``conversation_id``'s fork family (its root and every fork of it, itself
        included); just itself for a conversation never forked (docs/branches.md). ``root``: its state's
        ``family_root`` when the caller read it already (saves reading it again)."""
        ...

    async def message_status(
        self, keys: Iterable[MessageKey], *, scene: bool = False
    ) -> dict[MessageKey, MessageStatus]: ...

    async def bot(self, tenant_id: str, bot_id: str) -> BotView | None: ...

    async def persona(self, tenant_id: str, user_id: str, persona_id: str) -> PersonaView | None: ...


class SummariesPort(SummaryPages, Protocol):
    """The ``summaries`` projection (``SummariesReadModel``); the memory listing's ``listed`` and ``by_ids`` are
    ``SummaryPages``'."""

    async def apply(self, events: Sequence[EventEnvelope]) -> None: ...

    async def recent_summaries(
        self, tenant_id: str, user_id: str, conversation_id: str, limit: int = 10
    ) -> list[SummaryView]: ...

    async def inactive(self, tenant_id: str, summary_ids: Sequence[str]) -> set[str]: ...

    async def live_summaries(
        self, tenant_id: str, user_id: str, conversation_id: str, *, audience_member: str | None = None
    ) -> list[SummaryView]: ...


class KnowledgePort(FactQueries, Protocol):
    """The ``knowledge`` projection (``KnowledgeReadModel``); its queries (``facts_for``, ``owned``, ``page``)
    are ``FactQueries``."""

    async def apply(self, events: Sequence[EventEnvelope]) -> None: ...

    async def caught_up(self, tenant_id: str, streams: Sequence[str]) -> dict[str, int]:
        """Per knowledge stream, the version through which every one of its events has been applied (0: none
        known), as recorded by ``mark_caught_up``; a projection applied out of order moves nothing."""
        ...

    async def mark_caught_up(self, tenant_id: str, versions: Mapping[str, int]) -> None:
        """Record that every event of each stream up to its version is applied (never moves one back)."""
        ...

    async def by_id(self, tenant_id: str, fact_id: str) -> FactView | None: ...

    async def by_ids(self, tenant_id: str, fact_ids: Sequence[str]) -> list[FactView]: ...

    async def scope_versions(self, tenant_id: str, fact_ids: Sequence[str]) -> dict[str, int]: ...

    async def derived_from(
        self, tenant_id: str, user_id: str, conversation_id: str, message_id: str
    ) -> list[FactView]: ...

    async def in_conversation(self, tenant_id: str, user_id: str, conversation_id: str) -> list[FactView]: ...


class LegacyLorePort(LegacyPages, Protocol):
    """The legacy lore projection (``LegacyLoreReadModel``): memories converted to lore entries; the memory
    listing's ``listed`` is ``LegacyPages``'."""

    async def apply(self, events: Sequence[EventEnvelope]) -> None: ...

    async def by_ids(self, tenant_id: str, ids: Sequence[str], *, user_id: str) -> list[LegacyLoreView]: ...

    async def for_memories(
        self, tenant_id: str, memory_ids: Sequence[str], *, user_id: str | None = None
    ) -> dict[str, LegacyLoreView]: ...

    async def deleted(self, tenant_id: str, legacy_ids: Sequence[str]) -> set[str]: ...

    async def converted_memory_ids(self, tenant_id: str, user_id: str) -> list[str]: ...


class LorePort(Protocol):
    """The lorebooks projection (``LoreReadModel``): books and the attachment index."""

    async def apply(self, envelopes: Iterable[EventEnvelope]) -> None: ...

    async def state(self, tenant_id: str, lorebook_id: str) -> BookState | None: ...

    async def book(self, tenant_id: str, lorebook_id: str) -> LorebookView | None: ...

    async def books_by_ids(self, tenant_id: str, lorebook_ids: Sequence[str]) -> dict[str, LorebookView]: ...

    async def list_books(self, tenant_id: str, owner_user_id: str | None = None) -> list[BookListing]:
        """The tenant's live books (of one owner), by name then id, without their entries."""
        ...

    async def attached(
        self, tenant_id: str, bot_id: str, user_id: str | None = None, conversation_id: str | None = None
    ) -> list[LorebookRef]: ...


class MemoriesPort(MemoryListing, Protocol):
    """The memories of the memory API (``MemoriesReadModel``); the listing's ``newest`` is ``MemoryListing``."""

    async def apply(self, events: Sequence[EventEnvelope]) -> None: ...

    async def by_ids(self, tenant_id: str, memory_ids: Sequence[str]) -> list[MemoryView]: ...
