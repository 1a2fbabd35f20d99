"""The ``mnemo.rpc.context.assemble.v1`` reply as released Python clients validate it: mnemo-client's models
copied verbatim from ``clients/python/mnemo_client/wire/contract.py`` at ec729a4, the last shape before the
memory API's sources (its source kinds unchanged since 2026-11-25; older clients lack only optional fields,
which pydantic ignores either way). Never edit them to make a test pass: a reply they reject breaks every
platform still running that client. The live models may only add optional fields.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SourceKind = Literal[
    "message", "summary", "fact", "knowledge", "lore", "document", "legacy_memory", "persona", "system"
]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, str_strip_whitespace=False)


class Section(_Wire):
    name: str = Field(
        ...,
        description="system | persona | lore | legacy_memories | memories | knowledge | retrieved | history",
    )
    text: str
    tokens: int


class ChatMessage(_Wire):
    """One message of the chat-completions form of the context."""

    role: Literal["system", "user", "assistant"]
    content: str


class Source(_Wire):
    kind: SourceKind
    id: str
    message_ids: list[str] = Field(
        default_factory=list,
        description="the messages this item was derived from: a message itself; the messages a summary or legacy "
        "memory quotes (all it covers when an LLM wrote it); the messages a fact was learned from",
    )
    score: float | None = Field(None, description="retrieval similarity, when it was retrieved")
    detail: str | None = Field(
        None, description="why the item is here, when useful: for lore the key that fired (`key: Lythora`)"
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


def parses_as_released(reply: dict[str, Any]) -> ContextAssembleReply:
    """``reply`` as a released client reads it (raises pydantic's ValidationError where it would fail)."""
    return ContextAssembleReply.model_validate(reply)
