"""Events mnemo records in its log, their payload models, and the stream each belongs to.

Stream ids (``kind/tenant/...``) always start with the tenant, and conversations and personas also with
the user, so equal ids under another tenant or user are different streams.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.events.contract import KnowledgeSharing, Role
from shared.events.envelope import EventRegistry, stream_id

REGISTRY = EventRegistry()


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


# --- conversation/<tenant>/<user>/<conversation> ----------------------------------------------------
def conversation_stream(tenant_id: str, user_id: str, conversation_id: str) -> str:
    return stream_id("conversation", tenant_id, user_id, conversation_id)


class MessageRecorded(_Payload):
    """``message.recorded`` v2: a platform message accepted into its conversation."""

    user_id: str
    conversation_id: str
    message_id: str
    role: Role
    author_id: str | None
    author_name: str
    content: str
    created_at: datetime
    bot_ids: list[str]
    persona_id: str | None
    index: int = Field(..., ge=0, description="0-based position among the conversation's messages")
    tokens: int = Field(..., ge=0, description="estimated tokens of content")


def _message_recorded_v1_to_v2(p: dict[str, object]) -> dict[str, object]:
    # v1 had no token estimate; derive it the same way ingest does now.
    from shared.tokens import estimate_tokens

    p["tokens"] = estimate_tokens(str(p.get("content", "")))
    return p


MESSAGE_RECORDED = REGISTRY.register(
    "message.recorded",
    schema_version=2,
    encrypted=("author_name", "content"),
    upcasters={1: _message_recorded_v1_to_v2},
)


class MessageEdited(_Payload):
    user_id: str
    conversation_id: str
    message_id: str
    content: str
    edited_at: datetime
    tokens: int


MESSAGE_EDITED = REGISTRY.register("message.edited", encrypted=("content",))


class MessageDeleted(_Payload):
    user_id: str
    conversation_id: str
    message_id: str
    deleted_at: datetime


MESSAGE_DELETED = REGISTRY.register("message.deleted")


# --- bot/<tenant>/<bot> ----------------------------------------------------------------------------
def bot_stream(tenant_id: str, bot_id: str) -> str:
    return stream_id("bot", tenant_id, bot_id)


class BotRecorded(_Payload):
    """``bot.recorded``: a bot profile as upserted. ``gender``, ``age`` and ``knowledge_sharing`` were added
    later with null defaults, so older events read as "not given" (no new schema version needed)."""

    bot_id: str
    owner_user_id: str | None
    name: str
    system_prompt: str
    updated_at: datetime
    gender: str | None = None
    age: str | None = None
    knowledge_sharing: KnowledgeSharing | None = None


BOT_RECORDED = REGISTRY.register("bot.recorded", encrypted=("name", "system_prompt", "gender", "age"))


# --- persona/<tenant>/<user>/<persona> -----------------------------------------------------------------
def persona_stream(tenant_id: str, user_id: str, persona_id: str) -> str:
    return stream_id("persona", tenant_id, user_id, persona_id)


class PersonaRecorded(_Payload):
    """``persona.recorded``: a persona as upserted; ``instructions`` (added later) defaults to empty."""

    user_id: str
    persona_id: str
    name: str
    description: str
    traits: list[str]
    updated_at: datetime
    instructions: str = ""


PERSONA_RECORDED = REGISTRY.register("persona.recorded", encrypted=("name", "description", "traits", "instructions"))


# --- summaries/<tenant>/<user>/<conversation> (own stream: no contention with ingest) ---------------
def summary_stream(tenant_id: str, user_id: str, conversation_id: str) -> str:
    return stream_id("summaries", tenant_id, user_id, conversation_id)


SummaryType = Literal["short_term", "long_term", "consolidated"]


class SummaryCreated(_Payload):
    summary_id: str
    user_id: str
    conversation_id: str
    summary_type: SummaryType
    text: str
    importance: int = Field(..., ge=1, le=10)
    participants: list[str] = Field(..., description="bot ids and persona ids present in the range")
    start_at: datetime
    end_at: datetime
    message_ids: list[str]
    first_index: int
    last_index: int
    method: str = Field(..., description="`extractive` (no LLM) or `llm:<model>`")
    prompt_version: str | None = Field(None, description="e.g. `summarize.v1` when an LLM wrote it")
    emotional_context: str | None = Field(None, description="the mood and how it shifted (LLM summaries)")
    audience: list[str] = Field(
        default_factory=lambda: [EVERYONE],
        description="the characters (bot and persona ids) who may be shown this summary: each witnessed every "
        "message it covers; `*` when the messages named no characters (no presence information)",
    )
    consolidates: list[str] = Field(
        default_factory=list, description="summary ids this `consolidated`/`long_term` summary replaces"
    )


EVERYONE = "*"
SUMMARY_CREATED = REGISTRY.register("summary.created", encrypted=("text", "emotional_context"))


class SummaryRetired(_Payload):
    """A summary stops being a live memory: folded into a consolidation, made stale by an edit or delete of a
    message it covers (``replaced_by`` is its recomputation, if any), or deleted by its owner. Its vectors are
    deleted; the ``summary.created`` event stays in the log."""

    summary_id: str
    user_id: str
    conversation_id: str
    reason: Literal["consolidated", "stale", "deleted"]
    replaced_by: str | None = None
    retired_at: datetime


SUMMARY_RETIRED = REGISTRY.register("summary.retired")


# --- knowledge/<tenant>/<character> -------------------------------------------------------------------
def knowledge_stream(tenant_id: str, character_id: str) -> str:
    return stream_id("knowledge", tenant_id, character_id)


class MessagesWitnessed(_Payload):
    """A character (bot or persona) was present when these messages were said."""

    character_id: str
    character_kind: Literal["bot", "persona"]
    user_id: str
    conversation_id: str
    message_ids: list[str]
    first_index: int
    last_index: int


MESSAGES_WITNESSED = REGISTRY.register("knowledge.witnessed")


FactType = Literal["episodic", "semantic", "declarative", "procedural"]


def player_scope(user_id: str) -> str:
    """A user's private scope: the default of every fact learned in their conversations."""
    return f"player:{user_id}"


def campaign_scope(campaign_id: str) -> str:
    """A shared world: facts a player promoted for everyone in that campaign."""
    return f"campaign:{campaign_id}"


def character_scope(character_id: str) -> str:
    """Knowledge of the character itself, whoever it talks to."""
    return f"character:{character_id}"


class FactLearned(_Payload):
    """``knowledge.fact_learned``: a character learned one fact in one user's conversation.

    Facts are never rewritten: a newer fact with the same ``subject`` supersedes an older one when read, and
    both stay in the log. ``subject`` is a normalised key of what the fact is about (``ana:home``)."""

    fact_id: str
    character_id: str
    character_kind: Literal["bot", "persona"]
    user_id: str = Field(..., description="the user whose conversation taught it (the fact's owner)")
    conversation_id: str
    text: str = Field(..., description="a standalone statement, e.g. `Ana lives in Port Vell.`")
    subject: str = Field(..., description="normalised key of what the fact is about; supersession key")
    fact_type: FactType
    tags: list[str] = Field(default_factory=list)
    confidence: float = Field(..., ge=0.0, le=1.0)
    learned_at: datetime
    scope: str = Field(..., description="`player:<user>` (default), `character:<id>` or `campaign:<id>`")
    message_ids: list[str] = Field(..., description="the messages it was learned from")
    method: str = Field(..., description="`llm:<model>` or `pattern`")
    prompt_version: str | None = Field(None, description="e.g. `extract_knowledge.v1` when an LLM extracted it")


FACT_LEARNED = REGISTRY.register("knowledge.fact_learned", encrypted=("text", "subject"))


class FactsConsolidated(FactLearned):
    """``knowledge.facts_consolidated``: the character's oldest facts (``consolidates``) folded into this one
    broader fact because the per-user cap was exceeded; the folded facts stop being current, nothing is
    dropped from the log. ``method`` is ``llm:<model>`` or ``extractive``. Also written when a consolidated
    fact is retired (a source message was edited or deleted): the facts it folded that did not come from that
    message are consolidated again (possibly just one)."""

    consolidates: list[str] = Field(..., min_length=1, description="fact ids this fact replaces")


FACTS_CONSOLIDATED = REGISTRY.register("knowledge.facts_consolidated", encrypted=("text", "subject"))


class FactRetired(_Payload):
    """``knowledge.fact_retired``: a fact stops being current because a message it was learned from was
    edited (``stale``; it is re-extracted from the new text) or deleted."""

    fact_id: str
    character_id: str
    user_id: str
    reason: Literal["stale", "deleted"]
    message_id: str = Field(..., description="the edited or deleted source message")
    retired_at: datetime


FACT_RETIRED = REGISTRY.register("knowledge.fact_retired")


class FactScopeChanged(_Payload):
    """Audit record of a scope change requested by a user (who, from which scope, to which, when)."""

    fact_id: str
    character_id: str
    owner_user_id: str
    by_user_id: str
    from_scope: str
    to_scope: str
    at: datetime


class FactPromoted(FactScopeChanged):
    """``knowledge.fact_promoted``: a player shared their fact with a campaign."""


class FactUnpromoted(FactScopeChanged):
    """``knowledge.fact_unpromoted``: the promotion was undone; the fact is back in the player's scope."""


FACT_PROMOTED = REGISTRY.register("knowledge.fact_promoted")
FACT_UNPROMOTED = REGISTRY.register("knowledge.fact_unpromoted")


# --- lorebook/<tenant>/<book> -------------------------------------------------------------------------
def lorebook_stream(tenant_id: str, lorebook_id: str) -> str:
    return stream_id("lorebook", tenant_id, lorebook_id)


class LorebookImported(_Payload):
    """A book was imported: the normalised book (``shared.lore.model.Lorebook`` dumped by field name) and the
    source document as read (kept so that export can write back what mnemo does not model)."""

    lorebook_id: str
    owner_user_id: str
    name: str
    format: str
    book: dict[str, object]
    original: dict[str, object]
    warnings: list[dict[str, object]]
    imported_at: datetime


LOREBOOK_IMPORTED = REGISTRY.register("lorebook.imported", encrypted=("name", "book", "original", "warnings"))


class LorebookAttached(_Payload):
    """The book applies to these bots' conversations and/or one user's conversation (ids only, no user text)."""

    lorebook_id: str
    bot_ids: list[str]
    user_id: str | None = None
    conversation_id: str | None = None
    attached_at: datetime


LOREBOOK_ATTACHED = REGISTRY.register("lorebook.attached")


class LorebookCreated(_Payload):
    """An empty book was created (entries come as ``lorebook.entry_created``)."""

    lorebook_id: str
    owner_user_id: str
    name: str
    description: str = ""
    created_at: datetime


LOREBOOK_CREATED = REGISTRY.register("lorebook.created", encrypted=("name", "description"))


class LorebookEntryWritten(_Payload):
    """The whole entry after the change (``shared.lore.model.LoreEntry`` dumped by field name): the fold
    replaces the entry with the same uid, so a replayed log never needs the request that made it."""

    lorebook_id: str
    uid: int
    entry: dict[str, object]
    at: datetime


LOREBOOK_ENTRY_CREATED = REGISTRY.register("lorebook.entry_created", encrypted=("entry",))
LOREBOOK_ENTRY_UPDATED = REGISTRY.register("lorebook.entry_updated", encrypted=("entry",))


class LorebookEntryDeleted(_Payload):
    lorebook_id: str
    uid: int
    at: datetime


LOREBOOK_ENTRY_DELETED = REGISTRY.register("lorebook.entry_deleted")


class LorebookDeleted(_Payload):
    """The book is gone: its entries, its attachments and its vectors (the fold keeps a tombstone)."""

    lorebook_id: str
    at: datetime


LOREBOOK_DELETED = REGISTRY.register("lorebook.deleted")


class LorebookDetached(_Payload):
    """The book no longer applies to these bots and/or to that conversation (ids only)."""

    lorebook_id: str
    bot_ids: list[str]
    user_id: str | None = None
    conversation_id: str | None = None
    detached_at: datetime


LOREBOOK_DETACHED = REGISTRY.register("lorebook.detached")


# --- legacy_lore/<tenant>/<user>/<legacy> -----------------------------------------------------------------
def legacy_lore_stream(tenant_id: str, user_id: str, legacy_id: str) -> str:
    return stream_id("legacy_lore", tenant_id, user_id, legacy_id)


class LegacyLoreCreated(_Payload):
    """A user kept a memory (a summary) as a lore entry of type ``legacy_memory`` for chosen bots and personas.

    It carries what it keeps of the memory (text, participants, date range, importance, emotional tags) so the
    entry stands on its own: deleting the memory deletes the entry too (``legacy_lore.deleted``), but nothing
    else about the memory changes it."""

    legacy_id: str
    user_id: str
    memory_id: str = Field(..., description="the summary it was made from")
    conversation_id: str
    entry_type: Literal["legacy_memory"] = "legacy_memory"
    title: str | None = None
    text: str
    participants: list[str]
    start_at: datetime
    end_at: datetime
    importance: int = Field(..., ge=1, le=10)
    emotional_tags: list[str]
    applies_to_bots: list[str]
    applies_to_personas: list[str]
    summary_type: str
    method: str
    prompt_version: str | None = None
    created_at: datetime


LEGACY_LORE_CREATED = REGISTRY.register("legacy_lore.created", encrypted=("title", "text", "emotional_tags"))


class LegacyLoreDeleted(_Payload):
    legacy_id: str
    user_id: str
    memory_id: str
    reason: Literal["memory_deleted"] = "memory_deleted"
    deleted_at: datetime


LEGACY_LORE_DELETED = REGISTRY.register("legacy_lore.deleted")


# --- lore_timed/<tenant>/<user>/<conversation> ----------------------------------------------------------
def lore_timed_stream(tenant_id: str, user_id: str, conversation_id: str) -> str:
    return stream_id("lore_timed", tenant_id, user_id, conversation_id)


class LoreTimedStateRecorded(_Payload):
    """The conversation's World Info timed effects after a context was assembled (spec §3.9): the sticky and
    cooldown records (``services.context_assembler.activation.timed.TimedState`` dumped; entry idents and hashes, no user text) as of a
    chat of ``message_count`` messages. Written by the context-assembler only when a scan changed them."""

    user_id: str
    conversation_id: str
    message_count: int = Field(..., ge=0)
    sticky: dict[str, dict[str, object]]
    cooldown: dict[str, dict[str, object]]
    recorded_at: datetime


LORE_TIMED_STATE_RECORDED = REGISTRY.register("lore.timed_state_recorded")
