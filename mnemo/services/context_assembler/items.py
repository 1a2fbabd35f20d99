"""The assembler's own value types: what the gathering half hands to the pure assembly."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal


@dataclass(frozen=True)
class BotProfile:
    bot_id: str
    name: str
    system_prompt: str
    gender: str | None = None
    age: str | None = None
    knowledge_sharing: str | None = None  # open | guarded | secretive (BotUpserted)


@dataclass(frozen=True)
class PersonaProfile:
    persona_id: str
    name: str
    description: str = ""
    traits: tuple[str, ...] = ()
    instructions: str = ""  # the user's custom instructions while playing this persona


@dataclass(frozen=True)
class SummaryItem:
    """A summary (or legacy memory) found by vector search; ``score`` is the cosine similarity to the query. Not
    the memory listing's wire ``MemoryItem``."""

    summary_id: str
    text: str
    score: float
    message_ids: tuple[str, ...] = ()
    first_index: int = 0
    start_at: datetime | None = None
    kind: Literal["summary", "legacy_memory"] = "summary"  # a legacy memory is a summary turned into lore


@dataclass(frozen=True)
class RememberedItem:
    """A memory written through the memory API that this context may show (``recall/remembered.py``).

    ``memory_type`` decides its section (:data:`REMEMBERED_SECTION`); ``score`` is its dense cosine to the query
    times its recency factor (``recall/scoring.py``), what the budget packs it by; ``why`` says where it came
    from (the ``detail`` of its source)."""

    memory_id: str
    memory_type: str
    text: str
    score: float
    why: str
    assets: tuple[dict[str, Any], ...] = ()
    occurred_at: datetime | None = None


#: The section of each memory type (issue 28): procedural and declarative beside lore, episodic beside the
#: summaries, semantic beside the speaking bot's facts.
REMEMBERED_SECTION = {"procedural": "lore", "declarative": "lore", "episodic": "memories", "semantic": "knowledge"}


def remembered_section(item: RememberedItem) -> str:
    """The section ``item`` goes to (an unknown type, from a newer writer, beside the summaries)."""
    return REMEMBERED_SECTION.get(item.memory_type, "memories")


@dataclass(frozen=True)
class KnowledgeItem:
    """A fact the speaking character learned (only its own, only from what it witnessed or was told).

    ``score``: the request's dense cosine to it when the fact search found it, 0 when the search ran and did
    not, None when no search judged it (no query, no index): what the budget packs it by (``budget.py``)."""

    fact_id: str
    text: str
    message_ids: tuple[str, ...] = ()
    score: float | None = None


@dataclass(frozen=True)
class ChatLine:
    """One message of this conversation (history, or retrieved with a ``score``).

    ``persona_id`` is the user's persona that wrote a user message and ``persona_name`` its name as now
    recorded (empty when unknown): history lines are labelled with it, so a persona switch is visible."""

    message_id: str
    index: int
    role: str
    author_name: str
    content: str
    score: float | None = None
    author_id: str | None = None
    persona_id: str | None = None
    persona_name: str = ""


@dataclass(frozen=True)
class LoreItem:
    """An activated lore entry: ``detail`` says why it fired (``key: Lythora``, ``constant``, ...)."""

    book_id: str
    uid: int
    content: str
    detail: str
    order: float = 100
    constant: bool = False
    # Where it goes (SillyTavern World Info, ``mnemo.shared.lore.model.Position``/``Role``): 0 before and 1 after the
    # character definition, 2/3 Author's Note top/bottom, 4 at ``depth`` in the history as ``role`` (0 system,
    # 1 user, 2 assistant), 5/6 example messages top/bottom, 7 outlet. The default keeps an entry in the lore
    # section (Author's Note top), as all entries were placed before positions were honoured.
    position: int = 2
    depth: int = 4
    role: int = 0
    # A chunk of an uploaded document (``document_lore.py``) is lore too, with its own source kind and id.
    source_kind: Literal["lore", "document"] = "lore"
    source_id: str | None = None

    @property
    def ident(self) -> str:
        return f"{self.book_id}.{self.uid}"
