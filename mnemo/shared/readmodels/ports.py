"""Ports of the shared read models: what services call on them, as ``Protocol``s.

Each has two adapters passing one contract suite (``tests/contract/test_readmodels_contract.py``): the
MongoDB projection (``repository.py``, ``summaries.py``, ``knowledge.py``, ``legacy_lore.py``, ``lore.py``)
and an in-memory fake (``inmemory/``) for component tests that need no server; the projection catalog
(``catalog.py``) names both for each read model. The ports hold the projection (``apply``) and the queries
services make; indexes and dropping before a replay are the catalog's (the collections it declares).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Protocol

from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.lore.history import BookState
from mnemo.shared.readmodels.conversation import ConversationState
from mnemo.shared.readmodels.knowledge import FactView
from mnemo.shared.readmodels.legacy_lore import LegacyLoreView
from mnemo.shared.readmodels.lore import BookListing, LorebookRef, LorebookView
from mnemo.shared.readmodels.memories import Clause, MemoryView
from mnemo.shared.readmodels.messages import MessageKey, MessageStatus, MessageView
from mnemo.shared.readmodels.profiles import BotView, PersonaView
from mnemo.shared.readmodels.summaries import SummaryListed, SummaryView


class ConversationReadModel(Protocol):
    """Conversations, messages, bots and personas (``ReadModels``)."""

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

    async def message_range(
        self,
        tenant_id: str,
        user_id: str,
        conversation_id: str,
        start_index: int,
        end_index: int | None = None,
        *,
        include_deleted: bool = False,
        visible_to: str | None = None,
    ) -> list[MessageView]: ...

    async def recent(
        self,
        tenant_id: str,
        user_id: str,
        conversation_id: str,
        limit: int,
        *,
        before_index: int | None = None,
        visible_to: str | None = None,
    ) -> list[MessageView]: ...

    async def by_ids(
        self,
        tenant_id: str,
        user_id: str,
        conversation_id: str,
        message_ids: Iterable[str],
        *,
        include_deleted: bool = False,
        visible_to: str | None = None,
    ) -> list[MessageView]: ...

    async def bot(self, tenant_id: str, bot_id: str) -> BotView | None: ...

    async def persona(self, tenant_id: str, user_id: str, persona_id: str) -> PersonaView | None: ...


class SummariesPort(Protocol):
    """The ``summaries`` projection (``SummariesReadModel``)."""

    async def apply(self, events: Sequence[EventEnvelope]) -> None: ...

    async def recent_summaries(
        self, tenant_id: str, user_id: str, conversation_id: str, limit: int = 10
    ) -> list[SummaryView]: ...

    async def by_ids(
        self,
        tenant_id: str,
        summary_ids: Sequence[str],
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
    ) -> list[SummaryView]: ...

    async def inactive(self, tenant_id: str, summary_ids: Sequence[str]) -> set[str]: ...

    async def live_summaries(
        self, tenant_id: str, user_id: str, conversation_id: str, *, audience_member: str | None = None
    ) -> list[SummaryView]: ...

    async def page(
        self,
        tenant_id: str,
        user_id: str,
        *,
        summary_type: str | None = None,
        participant: str | None = None,
        only_ids: Sequence[str] | None = None,
        except_ids: Sequence[str] | None = None,
        include_retired: bool = False,
        limit: int,
        offset: int = 0,
    ) -> tuple[list[SummaryListed], int]: ...


class KnowledgePort(Protocol):
    """The ``knowledge`` projection (``KnowledgeReadModel``)."""

    async def apply(self, events: Sequence[EventEnvelope]) -> None: ...

    async def facts_for(
        self,
        tenant_id: str,
        character_id: str,
        *,
        user_id: str,
        campaign_id: str | None = None,
        limit: int = 50,
        exclude_conversations: Collection[str] = (),
    ) -> list[FactView]:
        """``exclude_conversations``: conversations of ``user_id`` whose facts neither count nor supersede
        (the other branches of a fork family, docs/branches.md)."""
        ...

    async def owned(
        self, tenant_id: str, character_id: str, user_id: str, exclude_conversations: Collection[str] = ()
    ) -> list[FactView]: ...

    async def page(
        self,
        tenant_id: str,
        user_id: str,
        *,
        character_id: str | None = None,
        fact_type: str | None = None,
        limit: int = 50,
        offset: int = 0,
        include_inactive: bool = False,
    ) -> tuple[list[FactView], int]: ...

    async def by_id(self, tenant_id: str, fact_id: str) -> FactView | None: ...

    async def by_ids(self, tenant_id: str, fact_ids: Sequence[str]) -> list[FactView]: ...

    async def scope_versions(self, tenant_id: str, fact_ids: Sequence[str]) -> dict[str, int]: ...

    async def derived_from(
        self, tenant_id: str, user_id: str, conversation_id: str, message_id: str
    ) -> list[FactView]: ...

    async def in_conversation(self, tenant_id: str, user_id: str, conversation_id: str) -> list[FactView]: ...


class LegacyLorePort(Protocol):
    """The legacy lore projection (``LegacyLoreReadModel``): memories converted to lore entries."""

    async def apply(self, events: Sequence[EventEnvelope]) -> None: ...

    async def by_ids(self, tenant_id: str, ids: Sequence[str], *, user_id: str) -> list[LegacyLoreView]: ...

    async def for_memories(
        self, tenant_id: str, memory_ids: Sequence[str], *, user_id: str | None = None
    ) -> dict[str, LegacyLoreView]: ...

    async def deleted(self, tenant_id: str, legacy_ids: Sequence[str]) -> set[str]: ...

    async def converted_memory_ids(self, tenant_id: str, user_id: str) -> list[str]: ...

    async def page(
        self, tenant_id: str, user_id: str, *, bot_id: str | None = None, limit: int, offset: int = 0
    ) -> tuple[list[LegacyLoreView], int]: ...


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


class MemoriesPort(Protocol):
    """The memories of the memory API (``MemoriesReadModel``)."""

    async def apply(self, events: Sequence[EventEnvelope]) -> None: ...

    async def by_ids(self, tenant_id: str, memory_ids: Sequence[str]) -> list[MemoryView]: ...

    async def newest(
        self,
        tenant_id: str,
        clauses: Sequence[Clause],
        *,
        types: Sequence[str] | None = None,
        tags: Sequence[str] = (),
        all_tags: bool = False,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int,
    ) -> list[MemoryView]: ...
