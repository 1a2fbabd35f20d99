"""``knowledge/<tenant>/<character>``: what each character witnessed and learned, and the scopes of its facts."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from mnemo.shared.events.envelope import stream_id
from mnemo.shared.events.recorded.base import REGISTRY, RecordedPayload


def knowledge_stream(tenant_id: str, character_id: str) -> str:
    return stream_id("knowledge", tenant_id, character_id)


class MessagesWitnessed(RecordedPayload):
    """A character (bot or persona) was present when these messages were said."""

    character_id: str
    character_kind: Literal["bot", "persona"]
    user_id: str
    conversation_id: str
    message_ids: list[str]
    first_index: int
    last_index: int


MESSAGES_WITNESSED = REGISTRY.register("knowledge.witnessed", MessagesWitnessed, key_owner="user_id")


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


class FactLearned(RecordedPayload):
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
    method: str = Field(..., description="`llm:<model>`, `pattern`, or `manual:<user>` for a fact added by hand")
    prompt_version: str | None = Field(None, description="e.g. `extract_knowledge.v1` when an LLM extracted it")
    revises: str | None = Field(None, description="the fact this one is an edited version of (edited by hand)")


FACT_LEARNED = REGISTRY.register(
    "knowledge.fact_learned", FactLearned, encrypted=("text", "subject", "tags"), key_owner="user_id"
)


class FactsConsolidated(FactLearned):
    """``knowledge.facts_consolidated``: the character's oldest facts (``consolidates``) folded into this one
    broader fact because the per-user cap was exceeded; the folded facts stop being current, nothing is
    dropped from the log. ``method`` is ``llm:<model>`` or ``extractive``. Also written when a consolidated
    fact is retired (a source message was edited or deleted): the facts it folded that did not come from that
    message are consolidated again (possibly just one)."""

    consolidates: list[str] = Field(..., min_length=1, description="fact ids this fact replaces")


FACTS_CONSOLIDATED = REGISTRY.register(
    "knowledge.facts_consolidated", FactsConsolidated, encrypted=("text", "subject", "tags"), key_owner="user_id"
)


class FactRetired(RecordedPayload):
    """``knowledge.fact_retired``: a fact stops being current because a message it was learned from was
    edited (``stale``; it is re-extracted from the new text) or deleted, or by hand: a new version replaced it
    (``edited``) or a user retracted it (``retracted``)."""

    fact_id: str
    character_id: str
    user_id: str
    reason: Literal["stale", "deleted", "edited", "retracted"]
    message_id: str = Field("", description="the edited or deleted source message (empty for a change by hand)")
    retired_at: datetime
    by_user_id: str | None = Field(None, description="who retired it by hand")


FACT_RETIRED = REGISTRY.register("knowledge.fact_retired", FactRetired, key_owner="user_id")


class FactScopeChanged(RecordedPayload):
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


FACT_PROMOTED = REGISTRY.register("knowledge.fact_promoted", FactPromoted, key_owner="owner_user_id")
FACT_UNPROMOTED = REGISTRY.register("knowledge.fact_unpromoted", FactUnpromoted, key_owner="owner_user_id")
