"""Changes to a fact by hand (the knowledge aggregate's deciders of ``mnemo.rpc.knowledge.fact.{add,edit,retract}.v1``
and ``mnemo.rpc.memory.{promote,unpromote}.v1``), decided on the fact's current state, the clock passed in.

- add: a ``knowledge.fact_learned`` with method ``manual:<user>``, no source message, its own subject unless one
  is given (then it supersedes the character's older fact on that subject, as a learned one would). Its id is
  derived from the request (the idempotency key, or the character and text), so a retry adds nothing.
- edit: a new version. ``knowledge.fact_retired`` (``edited``) of the old fact and a ``knowledge.fact_learned``
  of the new one (``revises`` names the old), appended together: scope, subject and provenance are kept.
- retract: ``knowledge.fact_retired`` (``retracted``); retracting a retired fact changes nothing.
- promote / unpromote: ``knowledge.fact_promoted`` / ``knowledge.fact_unpromoted`` (who, from, to, when). Only a
  fact in the requester's ``player:<user>`` scope can be promoted; unpromote brings a promoted fact back to it.
  A request already in effect records nothing.

Ownership: a fact of another user or tenant is :class:`FactNotFound` (existence does not leak); only a current
fact can be edited, retracted or change scope (:class:`NotAllowed` otherwise).
"""

from __future__ import annotations

from datetime import datetime
from typing import TypeVar

from mnemo.shared.aggregates.knowledge.curation import Fact
from mnemo.shared.aggregates.knowledge.folds import ACTIVE
from mnemo.shared.events.envelope import NewEvent, deterministic_id
from mnemo.shared.events.recorded import (
    FACT_LEARNED,
    FACT_RETIRED,
    FactLearned,
    FactPromoted,
    FactRetired,
    FactUnpromoted,
    new_event,
    player_scope,
)
from mnemo_client.wire.knowledge_contract import FactAddRequest, FactEditRequest, FactRetractRequest


class FactNotFound(LookupError):
    """No such fact for this tenant and user."""


class NotAllowed(ValueError):
    """The fact's state does not allow the change (answered as ``bad_request`` with the reason)."""


F = TypeVar("F", bound=Fact)


def owned(fact: F | None, user_id: str, fact_id: str) -> F:
    """``fact`` if ``user_id`` owns it; a missing fact and another user's are both :class:`FactNotFound`."""
    if fact is None or fact.user_id != user_id:
        raise FactNotFound(f"no fact {fact_id!r} for this user")
    return fact


def changeable(fact: F | None, user_id: str, fact_id: str, change: str) -> F:
    """``fact`` if ``user_id`` owns it and it is current (``change`` ends the refusal: "can be edited")."""
    fact = owned(fact, user_id, fact_id)
    if fact.status != ACTIVE:
        raise NotAllowed(f"fact {fact_id!r} is {fact.status}; only current facts {change}")
    return fact


def checked_scope(req: FactAddRequest) -> str:
    """The scope of a fact added by hand: the user's own by default; never another player's."""
    scope = req.scope or player_scope(req.user_id)
    kind, _, name = scope.partition(":")
    if not name or kind not in ("player", "campaign", "character"):
        raise NotAllowed(f"scope {scope!r}: give `player:<user_id>`, `campaign:<id>` or `character:<character_id>`")
    if kind == "player" and name != req.user_id:
        raise NotAllowed("a fact can be added to your own player scope only")
    if kind == "character" and name != req.character_id:
        raise NotAllowed(f"scope {scope!r} names another character than {req.character_id!r}")
    return scope


def added_id(req: FactAddRequest) -> str:
    return deterministic_id(
        "knowledge.manual", req.tenant_id, req.user_id, req.character_id, req.idempotency_key or req.text
    )


def add(req: FactAddRequest, existing: Fact | None, now: datetime) -> list[NewEvent]:
    """The fact ``req`` adds, or nothing when it was added already (``existing``: the fact of ``added_id``)."""
    fact_id, u = added_id(req), req.user_id
    if existing is not None:
        if existing.user_id != u:  # a derived id cannot collide across users; refuse rather than leak
            raise NotAllowed("that idempotency key is taken")
        return []
    learned = FactLearned(
        fact_id=fact_id,
        character_id=req.character_id,
        character_kind=req.character_kind,
        user_id=u,
        conversation_id=req.conversation_id or "",
        text=req.text,
        subject=req.subject or f"manual:{fact_id}",
        fact_type=req.fact_type,
        tags=list(req.tags),
        confidence=req.confidence,
        learned_at=now,
        scope=checked_scope(req),
        message_ids=[],
        method=f"manual:{u}",
    )
    return [_event(req.tenant_id, FACT_LEARNED.name, learned, now)]


def edited_id(req: FactEditRequest) -> str:
    """The new version's id: derived from the fact and the change, so a retried edit finds the same one."""
    changes = {"text": req.text, "fact_type": req.fact_type, "tags": req.tags, "confidence": req.confidence}
    wanted = {k: v for k, v in changes.items() if v is not None}
    return deterministic_id("knowledge.edit", req.tenant_id, req.fact_id, repr(sorted(wanted.items())))


def edit(req: FactEditRequest, old: Fact, now: datetime) -> list[NewEvent]:
    """The old version (current: ``changeable``) retired as ``edited`` and the new one learned, in that order:
    the fields the request gives changed, the others kept."""
    u = req.user_id
    retired = FactRetired(
        fact_id=old.fact_id, character_id=old.character_id, user_id=old.user_id, reason="edited",
        retired_at=now, by_user_id=u,
    )  # fmt: skip
    learned = FactLearned(
        fact_id=edited_id(req),
        character_id=old.character_id,
        character_kind="persona" if old.character_kind == "persona" else "bot",
        user_id=old.user_id,
        conversation_id=old.conversation_id,
        text=old.text if req.text is None else req.text,
        subject=old.subject,
        fact_type=old.fact_type if req.fact_type is None else req.fact_type,
        tags=list(old.tags if req.tags is None else req.tags),
        confidence=old.confidence if req.confidence is None else req.confidence,
        learned_at=now,
        scope=old.scope,
        message_ids=list(old.message_ids),
        method=f"manual:{u}",
        revises=old.fact_id,
    )
    return [
        _event(req.tenant_id, FACT_RETIRED.name, retired, now),
        _event(req.tenant_id, FACT_LEARNED.name, learned, now),
    ]


def retract(req: FactRetractRequest, fact: Fact, now: datetime) -> list[NewEvent]:
    """``fact`` (owned) retired as ``retracted``; nothing if it is retired already."""
    if fact.status == "retired":
        return []
    if fact.status != ACTIVE:
        raise NotAllowed(f"fact {fact.fact_id!r} is {fact.status}; only current facts can be retracted")
    retired = FactRetired(
        fact_id=fact.fact_id, character_id=fact.character_id, user_id=fact.user_id, reason="retracted",
        retired_at=now, by_user_id=req.user_id,
    )  # fmt: skip
    return [_event(req.tenant_id, FACT_RETIRED.name, retired, now)]


def _event(tenant_id: str, kind: str, payload: FactLearned | FactRetired, now: datetime) -> NewEvent:
    # Derived from the fact and the change, so an append retried after a lost reply is the same event.
    event_id = deterministic_id(kind, tenant_id, payload.fact_id, "manual")
    return new_event(payload, event_id=event_id, tenant_id=tenant_id, occurred_at=now)


def scope_change(
    tenant_id: str, fact: Fact, *, by_user_id: str, to_scope: str, promote: bool, at: datetime, event_id: str
) -> NewEvent | None:
    """The audit event moving ``fact`` (current, owned) to ``to_scope``, or None when it is there already."""
    if fact.scope == to_scope:
        return None
    if promote and fact.scope != player_scope(by_user_id):
        raise NotAllowed(f"only facts in your player scope can be promoted; this one is in {fact.scope}")
    if not promote and not fact.scope.startswith("campaign:"):
        raise NotAllowed(f"only promoted facts can be unpromoted; this one is in {fact.scope}")
    model = FactPromoted if promote else FactUnpromoted
    payload = model(
        fact_id=fact.fact_id, character_id=fact.character_id, owner_user_id=fact.user_id, by_user_id=by_user_id,
        from_scope=fact.scope, to_scope=to_scope, at=at,
    )  # fmt: skip
    return new_event(payload, event_id=event_id, tenant_id=tenant_id, occurred_at=at)
