"""Public wire contract v1 of the memory request-reply surface: legacy lore, editing, deletion and listing.

Every request is answered with its reply model or with ``ErrorReply`` (codes: ``bad_request`` for invalid
JSON or a request that breaks its schema, with what is wrong; ``not_found`` for a memory that does not exist
for that tenant AND user, so another user's or tenant's ids look exactly like unknown ones; ``internal``).
Never change a published field's meaning; add a new version of the subject instead.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, model_validator

from mnemo_client.wire.contract import Id, _Tenanted, _Wire

# --- mnemo.rpc.memory.convert_to_lore.v1 / delete.v1 / list.v1 ------------------------------------------
LEGACY_MEMORY = "legacy_memory"
ListSource = Literal["memory", "knowledge", "all"]
ItemSource = Literal["memory", "legacy_lore", "knowledge"]
ItemType = Literal[
    "short_term",
    "long_term",
    "consolidated",
    "legacy_memory",
    "episodic",
    "semantic",
    "declarative",
    "procedural",
]
MAX_TARGETS = 1000
MAX_LEGACY_TAGS = 32
MAX_LEGACY_TEXT = 20_000
MAX_SUMMARY_TEXT = 20_000
MAX_LIST_LIMIT = 200
MAX_LIST_OFFSET = 100_000


class _Owned(_Tenanted):
    user_id: Id = Field(..., description="the user who owns the memory; another user's ids are not found")


class MemoryConvertToLoreRequest(_Owned):
    """`mnemo.rpc.memory.convert_to_lore.v1` request: keep a memory (a summary) as a `legacy_memory` lore entry."""

    memory_id: Id = Field(..., description="the memory (summary id) to convert")
    applies_to_bots: list[Id] = Field(
        default_factory=list, max_length=MAX_TARGETS, description="bots whose conversations with this user get it"
    )
    applies_to_personas: list[Id] = Field(
        default_factory=list, max_length=MAX_TARGETS, description="the user's personas it applies to"
    )
    title: str | None = Field(None, min_length=1, max_length=512, description="a display title (optional)")
    tags: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(
        None,
        max_length=MAX_LEGACY_TAGS,
        description="the entry's tags (listed as its `emotional_tags`), trimmed, lower-cased, each kept once; "
        "default: split from the summary's emotional context",
    )
    importance: int | None = Field(None, ge=1, le=10, description="the entry's importance; default: the summary's")
    text: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_LEGACY_TEXT,
        description="the entry's text as reviewed; default: the summary's",
    )
    participants: list[Id] | None = Field(
        None, max_length=MAX_TARGETS, description="who was present (bot and persona ids); default: the summary's"
    )

    @model_validator(mode="after")
    def _some_target(self) -> MemoryConvertToLoreRequest:
        if not self.applies_to_bots and not self.applies_to_personas:
            raise ValueError("give `applies_to_bots` or `applies_to_personas` (or both): lore applies to someone")
        return self


class MemoryConvertToLoreReply(_Wire):
    """`mnemo.rpc.memory.convert_to_lore.v1` reply. Converting the same memory again returns the same entry
    (the first conversion's targets, title, text, participants, tags and importance stand) with ``created`` false."""

    legacy_id: str = Field(..., description="the legacy lore entry's id (derived from tenant, user and memory)")
    memory_id: str
    applies_to_bots: list[str]
    applies_to_personas: list[str]
    created: bool = Field(..., description="false when the memory had already been converted")


class MemoryDeleteRequest(_Owned):
    """`mnemo.rpc.memory.delete.v1` request: delete a memory, its legacy lore and their vectors."""

    memory_id: Id = Field(..., description="the memory (summary id) to delete")


class MemoryDeleteReply(_Wire):
    """`mnemo.rpc.memory.delete.v1` reply; deleting again is harmless (``deleted`` is then false)."""

    memory_id: str
    deleted: bool = Field(..., description="false when the memory had already been deleted")
    legacy_ids: list[str] = Field(default_factory=list, description="legacy lore entries deleted with it")


class MemoryEditRequest(_Owned):
    """`mnemo.rpc.memory.edit.v1` request: change a memory's (a summary's) text. The edit is a new version with
    a new id: a `summary.created` with the new text (everything else kept: range, participants, audience,
    importance; ``method`` `manual:<user>`) and the edited one retired as `edited` with ``replaced_by``, both
    kept in the log. Only a live version can be edited: one already edited, consolidated or made stale is
    `bad_request` naming what replaced it (so two editors never overwrite each other unknowingly); sending the
    same edit again answers the same new id with ``changed`` false."""

    memory_id: Id = Field(..., description="the memory (summary id) to edit: its current version")
    text: str = Field(..., min_length=1, max_length=MAX_SUMMARY_TEXT, description="the memory's new text")

    @model_validator(mode="after")
    def _some_text(self) -> MemoryEditRequest:
        if not self.text.strip():
            raise ValueError("text is blank")
        return self


class MemoryEditReply(_Wire):
    """`mnemo.rpc.memory.edit.v1` reply."""

    memory_id: str = Field(..., description="the new version's id (use it for the next edit, delete or conversion)")
    previous_id: str = Field(..., description="the edited version's id (retired as `edited`, kept in the log)")
    changed: bool = Field(..., description="false when this edit had already been made (a retry)")


class MemoryListRequest(_Owned):
    """`mnemo.rpc.memory.list.v1` request: one page of the user's memories, legacy lore and knowledge.

    ``source``: `memory` (summaries and the legacy lore made from them), `knowledge` (characters' facts) or
    `all`. ``type``: a summary type, `legacy_memory` or a fact type; only items of that type. ``bot_id``:
    summaries the bot took part in, legacy lore that applies to it or names it as a participant, the bot's own
    facts. ``conversation_id``: summaries of that conversation, legacy lore made from them, facts learned in it.
    ``converted_to_lore``: when set, only summaries, converted (true) or not (false). Order: newest
    ``end_at`` first, then id, so consecutive pages neither skip nor repeat items while nothing changes.
    """

    source: ListSource = Field("all")
    type: ItemType | None = Field(None, description="only items of this type")
    bot_id: Id | None = Field(None, description="only items about this bot (participant, target or character)")
    conversation_id: Id | None = Field(None, description="only items from this conversation")
    converted_to_lore: bool | None = Field(None, description="only summaries converted (or not) to legacy lore")
    include_retired: bool = Field(
        False,
        description="also summaries folded into a consolidation, made stale or edited (their earlier versions); "
        "never deleted ones",
    )
    limit: int = Field(50, ge=1, le=MAX_LIST_LIMIT)
    offset: int = Field(0, ge=0, le=MAX_LIST_OFFSET)


class MemoryItem(_Wire):
    source: ItemSource = Field(..., description="`memory` (a summary), `legacy_lore` or `knowledge` (a fact)")
    id: str = Field(..., description="summary id, legacy id or fact id")
    type: str = Field(..., description="summary type, `legacy_memory` or fact type")
    text: str
    title: str | None = None
    participants: list[str] = Field(default_factory=list, description="bot and persona ids present")
    character_id: str | None = Field(None, description="the character who knows it (knowledge)")
    applies_to: list[str] = Field(default_factory=list, description="bots and personas legacy lore applies to")
    conversation_id: str | None = None
    memory_id: str | None = Field(None, description="the memory a legacy lore entry was made from")
    importance: int | None = None
    emotional_tags: list[str] = Field(default_factory=list, description="the mood of a legacy memory")
    tags: list[str] = Field(default_factory=list, description="a fact's tags (knowledge)")
    confidence: float | None = Field(None, description="a fact's confidence (knowledge)")
    scope: str | None = Field(None, description="a fact's scope: `player:<id>`, `campaign:<id>`, `character:<id>`")
    start_at: datetime | None = None
    end_at: datetime | None = None
    converted_to_lore: bool = False
    legacy_id: str | None = Field(None, description="the legacy lore entry made from this memory, if any")
    status: str = Field(
        "active",
        description="`active`; a summary's retirement (`consolidated`, `stale`, `edited`); a fact's `superseded`",
    )
    method: str | None = Field(None, description="how it was made: `extractive`, `llm:<model>`, ...")
    prompt_version: str | None = None
    message_ids: list[str] = Field(
        default_factory=list,
        description="the messages it was derived from: those a summary quotes (all it covers when an LLM wrote "
        "it), those a fact was learned from",
    )


class MemoryListReply(_Wire):
    """`mnemo.rpc.memory.list.v1` reply: ``total`` items match the filters; this page starts at ``offset``."""

    items: list[MemoryItem]
    total: int
    offset: int
    limit: int


# --- mnemo.rpc.memory.promote.v1 / mnemo.rpc.memory.unpromote.v1 -----------------------------------------
class MemoryPromoteRequest(_Owned):
    """`mnemo.rpc.memory.promote.v1` request: share one of the user's own `player:<user>` facts with a campaign
    (scope `campaign:<campaign_id>`). Recorded as a `knowledge.fact_promoted` audit event. A fact of another
    user or tenant is `not_found`; a fact not in the player's scope (or no longer current) is `bad_request`."""

    fact_id: Id = Field(..., description="the fact to promote")
    campaign_id: Id = Field(..., description="the shared world the fact joins")


class MemoryUnpromoteRequest(_Owned):
    """`mnemo.rpc.memory.unpromote.v1` request: undo a promotion, the fact returns to `player:<user>`.
    Recorded as a `knowledge.fact_unpromoted` audit event."""

    fact_id: Id = Field(..., description="the fact to bring back into the player's scope")


class MemoryScopeReply(_Wire):
    """Reply of promote and unpromote: the fact's scope now. A request already in effect (promoting to the
    campaign it is in, unpromoting a private fact) changes nothing: ``changed`` false, no audit event."""

    fact_id: str
    scope: str = Field(..., description="the fact's scope after the request, e.g. `campaign:c1`")
    previous_scope: str = Field(..., description="its scope before the request")
    changed: bool = Field(..., description="false when the request was already in effect")
