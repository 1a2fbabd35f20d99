"""Public wire contract v1 of knowledge by hand: what a game master or operator sees and changes of what each
character knows (request-reply, answered by the memory-extractor, which owns knowledge).

A fact belongs to the user whose conversation taught it (or who added it by hand): every request names that
user, and a fact of another user or tenant is ``not_found``. Every change is an event in the character's
knowledge stream (``knowledge/<tenant>/<character>``), so it is in the audit trail
(``mnemo.rpc.knowledge.fact.history.v1``), reaches the read models and the vector index like a learned fact,
and is replayed by ``mnemo replay``. An edit is a new version: the new fact supersedes the old one, which
stays in the log.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from mnemo_client.wire.contract import Id, _Tenanted, _Wire

FactType = Literal["episodic", "semantic", "declarative", "procedural"]
MAX_FACT_TEXT = 2000
MAX_TAGS = 50


class _FactOwner(_Tenanted):
    user_id: Id = Field(..., description="the user the fact belongs to; another user's facts are not found")


class FactInfo(_Wire):
    """A fact with its scope and provenance."""

    fact_id: str
    character_id: str = Field(..., description="the character who knows it")
    character_kind: str = Field(..., description="`bot` or `persona`")
    text: str
    fact_type: str
    tags: list[str] = Field(default_factory=list)
    confidence: float
    scope: str = Field(..., description="`player:<user>`, `campaign:<id>` or `character:<id>`")
    status: str = Field(..., description="`active`, `superseded`, `consolidated` or `retired`")
    conversation_id: str = Field(..., description="where it was learned (empty for a fact added by hand)")
    message_ids: list[str] = Field(default_factory=list, description="the messages it was learned from")
    method: str = Field(..., description="`llm:<model>`, `pattern`, `extractive`, or `manual:<user>` by hand")
    learned_at: datetime
    revises: str | None = Field(None, description="the fact this one is an edited version of")


class FactListRequest(_FactOwner):
    """`mnemo.rpc.knowledge.fact.list.v1` request: one page of what a character knows from this user, newest first."""

    character_id: Id | None = Field(None, description="only this character's facts")
    include_inactive: bool = Field(False, description="also superseded, consolidated and retired facts")
    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0, le=100_000)


class FactListReply(_Wire):
    facts: list[FactInfo]
    total: int
    offset: int
    limit: int


class FactAddRequest(_FactOwner):
    """`mnemo.rpc.knowledge.fact.add.v1` request: a fact a character knows, added by hand (a `knowledge.fact_learned`
    with method `manual:<user>`). Idempotent: the same ``idempotency_key`` (or, without one, the same character and
    text) answers the same fact with ``created`` false."""

    character_id: Id = Field(..., description="the character who is to know it")
    character_kind: Literal["bot", "persona"] = "bot"
    text: str = Field(..., min_length=1, max_length=MAX_FACT_TEXT, description="a standalone statement")
    fact_type: FactType = "semantic"
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS)
    confidence: float = Field(1.0, ge=0.0, le=1.0)
    scope: str | None = Field(
        None,
        max_length=300,
        description="`player:<user_id>` (the default: this user's conversations), `campaign:<id>` or "
        "`character:<character_id>` (whoever the character talks to)",
    )
    subject: str | None = Field(
        None,
        max_length=300,
        description="what it is about (`ana:home`): a later fact with the same subject supersedes it; default its own",
    )
    conversation_id: Id | None = Field(None, description="a conversation it belongs to, if any")
    idempotency_key: Id | None = Field(None, description="your id for this addition; a retry adds nothing")


class FactChangeReply(_Wire):
    """Reply of add, edit and retract."""

    fact_id: str = Field(..., description="the fact as it is now (a new id after an edit)")
    previous_fact_id: str | None = Field(None, description="the fact an edit replaced")
    changed: bool = Field(..., description="false when the request was already in effect (a retry)")
    fact: FactInfo | None = Field(None, description="the fact after the change (a retracted one: status `retired`)")


class FactEditRequest(_FactOwner):
    """`mnemo.rpc.knowledge.fact.edit.v1` request: a new version of a current fact (the fields given change, the
    others are kept; scope and provenance too); the old version is retired as `edited` and stays in the log."""

    fact_id: Id
    text: str | None = Field(None, min_length=1, max_length=MAX_FACT_TEXT)
    fact_type: FactType | None = None
    tags: list[str] | None = Field(None, max_length=MAX_TAGS)
    confidence: float | None = Field(None, ge=0.0, le=1.0)


class FactRetractRequest(_FactOwner):
    """`mnemo.rpc.knowledge.fact.retract.v1` request: the character no longer knows this fact (`knowledge.fact_retired`
    with reason `retracted`); retracting again changes nothing."""

    fact_id: Id


class FactHistoryRequest(_FactOwner):
    """`mnemo.rpc.knowledge.fact.history.v1` request: the audit trail of a fact and of its earlier versions."""

    fact_id: Id


class FactHistoryEntry(_Wire):
    at: datetime
    event: str = Field(..., description="the log event: `knowledge.fact_learned`, `knowledge.fact_retired`, ...")
    fact_id: str
    by: str | None = Field(None, description="who: the user, or how it was learned (`llm:<model>`, `pattern`)")
    summary: str = Field(..., description="what happened, in words")
    text: str | None = Field(None, description="the fact's text at that version")
    scope: str | None = None


class FactHistoryReply(_Wire):
    fact_id: str
    entries: list[FactHistoryEntry] = Field(..., description="oldest first")
