"""Public wire contract v1: the payloads a platform publishes and the context request-reply.

These models are the product's API. Field descriptions flow into the AsyncAPI document. Never change a
published field's meaning; add a new version of the subject instead.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

Id = Annotated[str, StringConstraints(min_length=1, max_length=256)]


def _in_utc_range(value: datetime) -> datetime:
    """Refuse a time that has no UTC equivalent (``0001-01-01T00:00:00+05:45``): every consumer converts to
    UTC (a time without a zone is taken as UTC), which would otherwise fail on every delivery."""
    try:
        (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).astimezone(UTC)
    except (OverflowError, ValueError):
        raise ValueError("out of range in UTC (years 1 to 9999)") from None
    return value


Moment = Annotated[datetime, AfterValidator(_in_utc_range)]
#: A memory's type: ``episodic`` (events, dialogue: summaries are episodic), ``semantic`` (facts),
#: ``declarative`` (canon, rules), ``procedural`` (how-to, mechanics).
MemoryType = Literal["episodic", "semantic", "declarative", "procedural"]
MAX_TITLE = 200
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")
_MEDIA_TYPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(\s*;.*)?$")


def _uri(value: str) -> str:
    if not _SCHEME.match(value):
        raise ValueError("an asset's uri needs a scheme and no spaces, e.g. `https://cdn.example/a.png`")
    return value


def _media_type(value: str) -> str:
    if not _MEDIA_TYPE.match(value):
        raise ValueError("a media type is `type/subtype`, e.g. `image/png` or `audio/ogg`")
    return value


Role = Literal["user", "assistant", "system", "narrator"]
KnowledgeSharing = Literal["open", "guarded", "secretive"]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, str_strip_whitespace=False)


class Asset(_Wire):
    """A link to an audio, image or other artifact of a memory "for rich recall": stored and returned, never
    fetched by mnemo."""

    uri: Annotated[str, StringConstraints(min_length=3, max_length=2048), AfterValidator(_uri)]
    media_type: Annotated[str, StringConstraints(min_length=3, max_length=255), AfterValidator(_media_type)]
    title: str | None = Field(None, max_length=MAX_TITLE)


class _Tenanted(_Wire):
    tenant_id: Id = Field(..., description="hard isolation boundary; nothing crosses tenants")


class MessageCreated(_Tenanted):
    """`mnemo.chat.message.created.v1`: a chat message was posted (JetStream)."""

    user_id: Id = Field(..., description="the end user who owns the conversation")
    conversation_id: Id = Field(...)
    message_id: Id = Field(..., description="the platform's id; the idempotency key")
    role: Role
    author_id: Id | None = Field(None, description="persona id for user messages, bot id for bot messages")
    author_name: str = Field("", max_length=512)
    content: str = Field(..., max_length=200_000)
    created_at: Moment = Field(..., description="RFC 3339 with a time zone")
    bot_ids: list[Id] = Field(default_factory=list, description="bots present in the scene")
    persona_id: Id | None = Field(None, description="the user's active persona, or null")
    swipe_of: Id | None = Field(
        None,
        description="set for an alternative (a swipe, a regenerated reply) of an earlier message: that "
        "message's id (or another alternative's); the new alternative becomes the current one, which alone is "
        "history (docs/branches.md)",
    )


class MessageSwipeSelected(_Tenanted):
    """`mnemo.chat.message.swipe_selected.v1`: the user chose which alternative of a message is current."""

    user_id: Id = Field(...)
    conversation_id: Id = Field(...)
    message_id: Id = Field(..., description="the alternative to make current (the original or a swipe's id)")
    selected_at: Moment


class ConversationForked(_Tenanted):
    """`mnemo.chat.conversation.forked.v1`: a new conversation continues another from one of its messages."""

    user_id: Id = Field(..., description="the user owning both conversations")
    conversation_id: Id = Field(..., description="the new conversation (the fork); must have no messages yet")
    parent_conversation_id: Id = Field(..., description="the conversation forked from")
    from_message_id: Id = Field(..., description="the parent's last message the fork keeps (its history ends there)")
    forked_at: Moment


class MessageEdited(_Tenanted):
    """`mnemo.chat.message.edited.v1`: the text of an earlier message changed."""

    user_id: Id = Field(...)
    conversation_id: Id = Field(...)
    message_id: Id = Field(...)
    edit_id: Id | None = Field(None, description="idempotency key of this edit; defaults to a hash of it")
    content: str = Field(..., max_length=200_000)
    edited_at: Moment


class MessageDeleted(_Tenanted):
    """`mnemo.chat.message.deleted.v1`: a message was removed from the conversation."""

    user_id: Id = Field(...)
    conversation_id: Id = Field(...)
    message_id: Id = Field(...)
    deleted_at: Moment


class BotUpserted(_Tenanted):
    """`mnemo.chat.bot.upserted.v1`: a character was created or changed."""

    bot_id: Id = Field(...)
    owner_user_id: Id | None = Field(None, description="the creator, if the platform tracks one")
    name: str = Field(..., min_length=1, max_length=512)
    system_prompt: str = Field("", max_length=100_000, description="the character's instructions")
    gender: str | None = Field(None, max_length=64, description="as the character presents (`female`, ...)")
    age: str | None = Field(None, max_length=64, description="free text: `34`, `looks 20, is 300`")
    knowledge_sharing: KnowledgeSharing | None = Field(
        None,
        description="how freely it shares what it knows: `open` (when asked), `guarded` (only with those it "
        "trusts, when it serves them), `secretive` (only when pressed hard); null says nothing about it",
    )
    updated_at: Moment


class PersonaUpserted(_Tenanted):
    """`mnemo.chat.persona.upserted.v1`: a user's persona was created or changed."""

    user_id: Id = Field(...)
    persona_id: Id = Field(...)
    name: str = Field(..., min_length=1, max_length=512)
    description: str = Field("", max_length=50_000)
    traits: list[str] = Field(default_factory=list, max_length=200)
    instructions: str = Field(
        "", max_length=50_000, description="the user's custom instructions while playing this persona"
    )
    updated_at: Moment


class ContextAssembleRequest(_Tenanted):
    """`mnemo.rpc.context.assemble.v1` request: what the platform asks before each bot reply."""

    user_id: Id = Field(...)
    conversation_id: Id = Field(...)
    bot_id: Id = Field(..., description="the character about to speak")
    persona_id: Id | None = None
    campaign_id: Id | None = Field(
        None, description="the shared world this conversation plays in: facts promoted to it are known too"
    )
    user_message: str = Field("", max_length=100_000, description="the message being answered")
    max_tokens: int = Field(8000, ge=64, le=1_000_000)
    recency_half_life_days: float | None = Field(
        None,
        ge=0,
        le=36_500,
        description="recency as a ranking lever of the memories shown (summaries, legacy memories, the memory API's "
        "memories): at this age a memory keeps the middle of its boost; 0 off; unset: the deployment's default, as "
        "the memory search",
    )
    knowledge_directive: bool | None = Field(
        None,
        description="the `directive` section, the rule that the speaking bot stays consistent with what it knows and "
        "meets what it does not know with ignorance, curiosity or confusion; unset: the deployment's default (on)",
    )
    as_of_message_id: Id | None = Field(
        None,
        description="the context as it would have been at this message of the conversation (the workbench's "
        "replay): the history ends with it, and only the summaries, facts and memories made from what precedes it "
        "(up to and including it) are shown; unset: now. A message the conversation does not hold: `not_found`",
    )


#: v1's source kinds, frozen: released clients validate ``kind`` against exactly this list, so an item of a newer
#: kind is reported under the nearest of these, its own kind in ``Source.exact_kind`` (a new value there is fine).
SourceKind = Literal[
    "message", "summary", "fact", "knowledge", "lore", "document", "legacy_memory", "persona", "system"
]


class Section(_Wire):
    name: str = Field(
        ...,
        description="system | persona | lore | legacy_memories | memories | knowledge | directive | retrieved | history",
    )
    text: str
    tokens: int


class ChatMessage(_Wire):
    """One message of the chat-completions form of the context."""

    role: Literal["system", "user", "assistant"]
    content: str


class Source(_Wire):
    kind: SourceKind = Field(
        ...,
        description="what the item is, among v1's kinds (never more: older clients reject another); an item of a "
        "newer kind is reported under the nearest one, with its own in `exact_kind`",
    )
    id: str
    message_ids: list[str] = Field(
        default_factory=list,
        description="the messages this item was derived from: a message itself; the messages a summary or legacy "
        "memory quotes (all it covers when an LLM wrote it); the messages a fact was learned from",
    )
    score: float | None = Field(None, description="retrieval similarity, when it was retrieved")
    detail: str | None = Field(
        None,
        description="why the item is here, when useful: for lore the key that fired (`key: Lythora`); for a "
        "memory written through the memory API (`exact_kind` `memory`) its type, namespace and who remembered it",
    )
    exact_kind: str | None = Field(
        None,
        description="the item's own kind where `kind` names the nearest v1 kind: `memory` for a memory written "
        "through the memory API, reported as `lore` (declarative, procedural), `summary` (episodic) or `knowledge` "
        "(semantic) by the section it is in; unset when `kind` is exact. New values may come: read it as a string",
    )
    assets: list[Asset] = Field(
        default_factory=list, description="a remembered memory's assets (audio, images...) as remembered, never fetched"
    )


class ContextAssembleReply(_Wire):
    """`mnemo.rpc.context.assemble.v1` reply."""

    context: str = Field(..., description="the rendered text, sections in injection order")
    sections: list[Section]
    sources: list[Source]
    token_count: int
    degraded: list[str] = Field(
        default_factory=list,
        description="parts that could not be served: `vector_index`, `embedder`, `history`, ...; "
        "`lore:<uid>` a constant lore entry and `knowledge:<fact_id>` a fact that did not fit in max_tokens",
    )
    messages: list[ChatMessage] = Field(
        default_factory=list,
        description="the same context for a chat-completions API: one system message with every section "
        "but history, then the history as user/assistant messages (at-depth lore inserted at its depth)",
    )


class ErrorBody(_Wire):
    code: str = Field(
        ...,
        description="bad_request | not_found | internal | unavailable | rate_limited | book_too_large | "
        "too_many_books (see docs/security.md, Limits)",
    )
    message: str


class ErrorReply(_Wire):
    """Any request-reply subject answers an invalid request with this, never with silence."""

    error: ErrorBody
