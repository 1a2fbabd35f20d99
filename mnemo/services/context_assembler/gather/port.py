"""The read port of context assembly: what the assembler reads from the read models, and its data types.

Adapted to the read models in ``reads.py``. Every method filters by tenant, and reads as the speaking bot may
know it (``mnemo/shared/presence.py``): the messages it witnessed, the summaries whose ``audience`` admits it, its
own facts, so a character that was away when a secret was told finds the secret in no section.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from mnemo.services.context_assembler.items import BotProfile, ChatLine, KnowledgeItem, PersonaProfile

if TYPE_CHECKING:
    from mnemo.services.context_assembler.gather.as_of import AsOf


@dataclass(frozen=True)
class HistoryAsked:
    """The history a context reads: the last ``limit`` live messages of the conversation that ``bot_id``
    witnessed, oldest first; with ``until_index`` (a context as of a message), the last ones at or before it."""

    tenant_id: str
    user_id: str
    conversation_id: str
    bot_id: str
    limit: int
    until_index: int | None = None


@dataclass(frozen=True)
class FactsAsked:
    """The facts a context reads: the bot's current ones visible in this user's conversations (and the
    campaign's), at most ``limit``; none learned in ``exclude_conversations`` (they do not supersede either).
    Hashable: the reads' cache keeps the answer under it."""

    tenant_id: str
    user_id: str
    bot_id: str
    limit: int
    campaign_id: str | None = None
    exclude_conversations: frozenset[str] = frozenset()
    learned_by: datetime | None = None  # only the facts learned by then, current among those (as of a message)


@dataclass(frozen=True)
class SummaryText:
    """A summary as the assembler shows it; ``message_ids`` are the messages its text cites (all it covers
    when it cites none: ``SummaryView.cited_message_ids``)."""

    summary_id: str
    conversation_id: str
    text: str
    message_ids: tuple[str, ...]
    first_index: int
    participants: tuple[str, ...] = ()
    last_index: int = 0
    end_at: datetime | None = None  # the time of the last message it covers (a context as of a message: as_of.py)


@dataclass(frozen=True)
class LegacyText:
    legacy_id: str
    text: str
    message_ids: tuple[str, ...] = ()
    end_at: datetime | None = None  # the time of the last message it covers


class ContextReads(Protocol):
    """The read models the assembler needs (adapted in ``reads.py``); every method filters by tenant."""

    async def bot(self, tenant_id: str, bot_id: str) -> BotProfile | None: ...

    async def persona(self, tenant_id: str, user_id: str, persona_id: str) -> PersonaProfile | None: ...

    async def active_persona_id(self, tenant_id: str, user_id: str, conversation_id: str) -> str | None: ...

    async def recent_messages(self, asked: HistoryAsked) -> list[ChatLine]:
        """The messages ``asked`` names (the read model filters on the stored ``bot_ids`` before decrypting)."""
        ...

    async def message_at(self, tenant_id: str, user_id: str, conversation_id: str, message_id: str) -> AsOf | None:
        """The live message ``message_id`` of that conversation as the cut of a context as of it (``as_of.py``),
        whoever witnessed it; None when the conversation holds no such message."""
        ...

    async def messages_by_ids(
        self, tenant_id: str, user_id: str, conversation_id: str, message_ids: Sequence[str], bot_id: str
    ) -> list[ChatLine]:
        """Those of the messages that are live and that ``bot_id`` witnessed."""
        ...

    async def summaries_by_ids(
        self, tenant_id: str, user_id: str, summary_ids: Sequence[str], bot_id: str
    ) -> list[SummaryText]:
        """Those of the user's live summaries (any conversation) whose audience admits ``bot_id`` (checked
        again on read: the search already filtered on it)."""
        ...

    async def legacy_memories(self, tenant_id: str, user_id: str, legacy_ids: Sequence[str]) -> list[LegacyText]:
        """Those of the user's live legacy memories (lore entries made from memories)."""
        ...

    async def knowledge(self, asked: FactsAsked) -> list[KnowledgeItem]:
        """The facts ``asked`` names, newest first."""
        ...

    async def family(self, tenant_id: str, user_id: str, conversation_id: str) -> frozenset[str]:
        """The conversation's fork family, itself included (docs/branches.md)."""
        ...
