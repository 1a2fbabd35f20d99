"""What a memory search found, as one shape whatever it came from (pure): remembered memories, summaries,
characters' facts and legacy memories become :class:`Recalled`, with their namespace, type, title and origin."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mnemo.shared.namespaces import player
from mnemo.shared.readmodels.knowledge import FactView
from mnemo.shared.readmodels.legacy_lore import LegacyLoreView
from mnemo.shared.readmodels.memories import MemoryView
from mnemo.shared.readmodels.summaries import SummaryView
from mnemo.shared.titles import short_title
from mnemo_client.wire.memory_api_contract import SearchSource


@dataclass(frozen=True)
class Recalled:
    """One found item before it is scored: what the reply shows of it and what the lexical part reads."""

    id: str
    source: SearchSource
    namespace: str
    type: str
    title: str
    content: str
    occurred_at: datetime
    origin: str
    tags: tuple[str, ...] = ()
    assets: tuple[dict[str, Any], ...] = ()
    metadata: dict[str, Any] | None = None
    bot_id: str | None = None
    conversation_id: str | None = None

    @property
    def text(self) -> str:
        return f"{self.title}\n{self.content}"


def from_memory(v: MemoryView) -> Recalled:
    origin = f"imported for {v.user_id}" if v.origin == "import" else f"remembered by {v.by_user_id}"
    return Recalled(
        v.memory_id,
        "memory",
        v.owner_namespace,
        v.memory_type,
        v.title,
        v.content,
        v.occurred_at,
        origin,
        v.tags,
        v.assets,
        v.metadata,
        v.bot_id,
        v.conversation_id,
    )


def from_summary(v: SummaryView) -> Recalled:
    return Recalled(
        v.summary_id,
        "summary",
        player(v.user_id),
        "episodic",
        short_title(v.text),
        v.text,
        v.end_at,
        f"summary of conversation {v.conversation_id}",
        conversation_id=v.conversation_id,
    )


def from_fact(v: FactView) -> Recalled:
    return Recalled(
        v.fact_id,
        "knowledge",
        v.scope,
        v.fact_type,
        short_title(v.text),
        v.text,
        v.learned_at,
        f"fact {v.character_id} learned in conversation {v.conversation_id}",
        v.tags,
        bot_id=v.character_id,
        conversation_id=v.conversation_id,
    )


def from_legacy(v: LegacyLoreView) -> Recalled:
    return Recalled(
        v.legacy_id,
        "legacy_lore",
        player(v.user_id),
        "episodic",
        v.title or short_title(v.text),
        v.text,
        v.end_at,
        f"legacy memory of conversation {v.conversation_id}",
        v.emotional_tags,
        conversation_id=v.conversation_id,
    )
