"""The assembler's own value types: what the gathering half hands to the pure assembly."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal


@dataclass(frozen=True)
class BotProfile:
    bot_id: str
    name: str
    system_prompt: str


@dataclass(frozen=True)
class PersonaProfile:
    persona_id: str
    name: str
    description: str = ""
    traits: tuple[str, ...] = ()


@dataclass(frozen=True)
class MemoryItem:
    """A summary found by vector search; ``score`` is the cosine similarity to the query."""

    summary_id: str
    text: str
    score: float
    message_ids: tuple[str, ...] = ()
    first_index: int = 0
    start_at: datetime | None = None
    kind: Literal["summary", "legacy_memory"] = "summary"  # a legacy memory is a summary turned into lore


@dataclass(frozen=True)
class KnowledgeItem:
    """A fact the speaking character learned (only its own, only from what it witnessed or was told)."""

    fact_id: str
    text: str
    message_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChatLine:
    """One message of this conversation (history, or retrieved with a ``score``)."""

    message_id: str
    index: int
    role: str
    author_name: str
    content: str
    score: float | None = None


@dataclass(frozen=True)
class LoreItem:
    """An activated lore entry: ``detail`` says why it fired (``key: Lythora``, ``constant``, ...)."""

    book_id: str
    uid: int
    content: str
    detail: str
    order: float = 100
    constant: bool = False

    @property
    def ident(self) -> str:
        return f"{self.book_id}.{self.uid}"
