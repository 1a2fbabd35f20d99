"""Public wire contract v1 of the memory API: remember, search, update, forget and history of typed memories.

A memory lives in one ``owner_namespace``: ``player:<user_id>`` (a player's own), ``campaign:<campaign_id>`` (a
shared world) or ``character:<bot_id>`` (what one character knows, whoever it talks to). A caller writes its
own ``player:<user_id>`` on the plain subjects; campaign and character namespaces take the engine's right,
which is a subject: the same call on ``mnemo.rpc.memory.engine.<verb>.v1`` (docs/memory-api.md, Rights).

Errors: ``bad_request`` (invalid JSON or request, saying what is wrong), ``forbidden`` (a namespace this caller
may not write or read), ``not_found`` (no such memory for this caller: another user's ids look unknown),
``conflict`` (``expected_version`` is not the memory's version), ``rate_limited``, ``internal``.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StringConstraints, model_validator

from mnemo_client.wire.contract import MAX_TITLE, Asset, Id, MemoryType, Moment, _Tenanted, _Wire

NamespaceKind = Literal["player", "campaign", "character"]
SearchSource = Literal["memory", "summary", "knowledge", "legacy_lore"]
MAX_CONTENT = 20_000
MAX_TAGS = 32
MAX_ASSETS = 16
MAX_METADATA = 32
MAX_SEARCH_LIMIT = 100
_NAMESPACE = re.compile(r"^(player|campaign|character):(.+)$", re.DOTALL)


def _namespace(value: str) -> str:
    m = _NAMESPACE.match(value)
    if m is None or not m[2].strip() or len(m[2]) > 256:
        raise ValueError("a namespace is `player:<user_id>`, `campaign:<campaign_id>` or `character:<bot_id>`")
    return value


Namespace = Annotated[str, StringConstraints(min_length=3, max_length=300), AfterValidator(_namespace)]
Tag = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=128)]
MetaValue = str | int | float | bool | None
Content = Annotated[str, StringConstraints(min_length=1, max_length=MAX_CONTENT)]
Title = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TITLE)]


def namespace_kind(namespace: str) -> tuple[NamespaceKind, str]:
    """``("player", "u1")`` for ``player:u1``; ValueError for anything that is not a namespace."""
    kind, _, owner = _namespace(namespace).partition(":")
    if kind == "player":
        return "player", owner
    return ("campaign", owner) if kind == "campaign" else ("character", owner)


def _metadata_ok(value: dict[str, MetaValue]) -> dict[str, MetaValue]:
    for key, v in value.items():
        if not 1 <= len(key) <= 64:
            raise ValueError("metadata keys are 1 to 64 characters")
        if isinstance(v, str) and len(v) > 2048:
            raise ValueError(f"metadata {key!r}: a value is at most 2,048 characters")
    return value


Metadata = Annotated[dict[str, MetaValue], Field(max_length=MAX_METADATA), AfterValidator(_metadata_ok)]


class _Caller(_Tenanted):
    user_id: Id = Field(..., description="the user the call acts for (a player, or the game master's user)")


class MemoryRememberRequest(_Caller):
    """`mnemo.rpc.memory.remember.v1` request: write one memory. With ``idempotency_key`` a retry (the reply
    was lost) finds the memory the first call made (``created`` false, its content unchanged)."""

    owner_namespace: Namespace = Field(
        ..., description="`player:<user_id>` (the caller's own), `campaign:<id>` or `character:<bot_id>`"
    )
    type: MemoryType = Field(
        ...,
        description="`episodic` (events, dialogue), `semantic` (facts), `declarative` (canon, rules), "
        "`procedural` (how-to, mechanics)",
    )
    content: Content = Field(..., description="the memory's text")
    title: Title | None = Field(None, description="a short title; derived from the content when absent")
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS, description="labels, e.g. `npc:choir_envoy`")
    assets: list[Asset] = Field(default_factory=list, max_length=MAX_ASSETS)
    metadata: Metadata = Field(default_factory=dict, description="e.g. `session_id`, `mission_id`, `confidence`")
    bot_id: Id | None = Field(None, description="the character who knows it: only contexts and searches as it see it")
    conversation_id: Id | None = Field(None, description="the conversation it came from, if any")
    occurred_at: Moment | None = Field(None, description="when it happened (recency ranks by it); default: now")
    idempotency_key: Id | None = Field(None, description="the client's id for this write: a retry makes nothing new")


class MemoryRememberReply(_Wire):
    memory_id: str
    created: bool = Field(..., description="false when the idempotency key had already made this memory")
    version: int = Field(..., description="the memory's version (1 when just made)")
    title: str
    forgotten: bool = Field(False, description="true when the idempotency key's memory was forgotten since")


class MemorySearchRequest(_Caller):
    """`mnemo.rpc.memory.search.v1` request: ranked memories, those remembered through this API and those mnemo
    derived from chats (summaries, characters' facts, legacy lore), with the visibility rules of a context.

    Namespaces: the caller's `player:<user_id>` by default (and `character:<bot_id>` with ``bot_id``); a
    campaign is searched when named; another player's namespace is `forbidden`, and `character:<b>` needs
    ``bot_id`` = b. With ``bot_id`` only what that character may know is found (its own facts, summaries of
    what it witnessed, memories for it or for everyone)."""

    query: str = Field("", max_length=2000, description="what to look for; empty: the newest first")
    namespaces: list[Namespace] | None = Field(None, max_length=32, description="default: see above")
    types: list[MemoryType] | None = Field(None, description="only memories of these types")
    sources: list[SearchSource] | None = Field(None, description="default: every source")
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS, description="only memories with these tags")
    tags_match: Literal["any", "all"] = Field("any", description="a memory needs any (or all) of ``tags``")
    bot_id: Id | None = Field(None, description="search as this character: only what it may know")
    since: Moment | None = Field(None, description="only memories that occurred at or after this time")
    until: Moment | None = Field(None, description="only memories that occurred before this time")
    limit: int = Field(10, ge=1, le=MAX_SEARCH_LIMIT)
    recency_half_life_days: float | None = Field(
        None, ge=0, le=36_500, description="recency's half-life (0: off); default MNEMO_CONTEXT_ASSEMBLER__RECENCY__*"
    )


class ScoreParts(_Wire):
    dense: float = Field(..., description="cosine of the query and the memory's best chunk")
    lexical: float = Field(..., description="share of the query's words (IDF-weighted) the memory holds, 0..1")
    recency: float = Field(..., description="the recency factor the relevance was multiplied by (1: none)")


class MemoryHit(_Wire):
    id: str = Field(..., description="memory id, summary id, fact id or legacy lore id (by ``source``)")
    source: SearchSource = Field(..., description="`memory` (this API), `summary`, `knowledge` or `legacy_lore`")
    namespace: str
    type: MemoryType
    title: str
    content: str
    tags: list[str] = Field(default_factory=list)
    assets: list[Asset] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    bot_id: str | None = Field(None, description="the character who knows it, if it belongs to one")
    conversation_id: str | None = None
    occurred_at: datetime | None = None
    score: float = Field(..., description="relevance x recency, in [0, 1], the order of the results")
    score_parts: ScoreParts
    origin: str = Field(..., description="where it came from, e.g. `remembered by u1`, `summary of conversation c1`")


class MemorySearchReply(_Wire):
    results: list[MemoryHit]
    degraded: list[str] = Field(
        default_factory=list, description="parts that could not be served (`embedder`, `vector_index`, ...)"
    )


class MemoryUpdateRequest(_Caller):
    """`mnemo.rpc.memory.update.v1` request: change a memory; what is not given stays. The namespace never
    changes (forget it and remember it elsewhere). With ``expected_version`` the update applies only to that
    version (`conflict` otherwise), so two editors cannot overwrite each other unknowingly."""

    memory_id: Id
    content: Content | None = None
    title: Title | None = None
    type: MemoryType | None = None
    tags: list[Tag] | None = Field(None, max_length=MAX_TAGS)
    assets: list[Asset] | None = Field(None, max_length=MAX_ASSETS)
    metadata: Metadata | None = None
    occurred_at: Moment | None = None
    expected_version: int | None = Field(None, ge=1, description="the version this update was made against")

    @model_validator(mode="after")
    def _some_change(self) -> MemoryUpdateRequest:
        fields = ("content", "title", "type", "tags", "assets", "metadata", "occurred_at")
        if all(getattr(self, f) is None for f in fields):
            raise ValueError(f"give at least one of {', '.join(fields)} to change")
        return self


class MemoryUpdateReply(_Wire):
    memory_id: str
    version: int = Field(..., description="the memory's version after the request")
    changed: bool = Field(..., description="false when the request changed nothing (same values)")


class MemoryForgetRequest(_Caller):
    """`mnemo.rpc.memory.forget.v1` request: the memory, its vectors and its rows go; the log keeps that it was
    forgotten (who and when; its text stays there encrypted until the owner's erasure shreds it)."""

    memory_id: Id
    reason: str | None = Field(None, max_length=500, description="why, kept with the record of the forgetting")


class MemoryForgetReply(_Wire):
    memory_id: str
    forgotten: bool = Field(..., description="false when it had already been forgotten")


class MemoryHistoryRequest(_Caller):
    """`mnemo.rpc.memory.history.v1` request: every version of a memory, read from the event log."""

    memory_id: Id


class MemoryVersion(_Wire):
    version: int
    change: Literal["remembered", "updated", "forgotten"]
    by_user_id: str = Field(..., description="who made the change")
    at: datetime
    content: str | None = Field(None, description="the text of this version (none once forgotten)")
    title: str | None = None
    type: MemoryType | None = None
    tags: list[str] | None = None
    assets: list[Asset] | None = None
    metadata: dict[str, Any] | None = None
    occurred_at: datetime | None = None
    reason: str | None = Field(None, description="a forgetting's reason")


class MemoryHistoryReply(_Wire):
    memory_id: str
    owner_namespace: str
    user_id: str = Field(..., description="the memory's owner: their data key encrypts it, their erasure shreds it")
    bot_id: str | None = Field(
        None, description="the character who knows it, as remembered (never changes); unset: whoever sees the namespace"
    )
    forgotten: bool
    versions: list[MemoryVersion] = Field(..., description="oldest first; texts left out once forgotten")
