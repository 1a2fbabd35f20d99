"""Knowledge by hand (``mnemo.rpc.knowledge.fact.{list,add,edit,retract}.v1``): what a game master or operator
changes of what a character knows, each change an event in the character's knowledge stream.

- add: a ``knowledge.fact_learned`` with method ``manual:<user>``, no source message, its own subject unless one
  is given (then it supersedes the character's older fact on that subject, as a learned one would). Its id is
  derived from the request (the idempotency key, or the character and text), so a retry adds nothing.
- edit: a new version. ``knowledge.fact_retired`` (``edited``) of the old fact and a ``knowledge.fact_learned``
  of the new one (``revises`` names the old), in one append: scope, subject and provenance are kept.
- retract: ``knowledge.fact_retired`` (``retracted``).

Ownership as for promotion (``promotion.py``): a fact of another user or tenant is ``not_found``; only a current
fact can be edited or retracted. Each append is at the stream's version (a concurrent change makes this one
re-read and re-decide), projected into the knowledge read model at once so the reply and the next read agree,
then published, so the embedding service indexes (or drops) the fact like a learned one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from mnemo.services.memory_extractor.promotion import FactNotFound, NotAllowed
from mnemo.shared.deps import CommittedPublisher
from mnemo.shared.eventlog.append import AppendDecision, append_with_retry
from mnemo.shared.eventlog.port import AppendResult, EventStore
from mnemo.shared.events.envelope import NewEvent, deterministic_id, utcnow
from mnemo.shared.events.recorded import (
    FACT_LEARNED,
    FACT_RETIRED,
    FactLearned,
    FactRetired,
    knowledge_stream,
    new_event,
    player_scope,
)
from mnemo.shared.readmodels.knowledge import ACTIVE, FactView
from mnemo.shared.readmodels.ports import KnowledgePort
from mnemo_client.wire.knowledge_contract import (
    FactAddRequest,
    FactChangeReply,
    FactEditRequest,
    FactInfo,
    FactListReply,
    FactListRequest,
    FactRetractRequest,
)

#: One attempt's decision on the knowledge stream named: a reply (nothing to append) or None (appended now).
_Decide = Callable[[str], Awaitable[AppendDecision[FactChangeReply | None]]]


def fact_info(f: FactView) -> FactInfo:
    """The reply's fact: every field of ``FactInfo`` is the view's field of that name (the wire model says
    what is shown; the view's other fields, e.g. its tenant and owner, are not)."""
    return FactInfo.model_validate(f, from_attributes=True)


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


class ManualKnowledge:
    def __init__(self, store: EventStore, publisher: CommittedPublisher, knowledge: KnowledgePort) -> None:
        self._store = store
        self._publisher = publisher
        self._knowledge = knowledge

    async def list_facts(self, req: FactListRequest) -> FactListReply:
        facts, total = await self._knowledge.page(
            req.tenant_id,
            req.user_id,
            character_id=req.character_id,
            limit=req.limit,
            offset=req.offset,
            include_inactive=req.include_inactive,
        )
        return FactListReply(facts=[fact_info(f) for f in facts], total=total, offset=req.offset, limit=req.limit)

    async def add(self, req: FactAddRequest) -> FactChangeReply:
        scope = checked_scope(req)
        t, u = req.tenant_id, req.user_id
        fact_id = deterministic_id("knowledge.manual", t, u, req.character_id, req.idempotency_key or req.text)
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
            learned_at=utcnow(),
            scope=scope,
            message_ids=[],
            method=f"manual:{u}",
        )

        async def decide(stream: str) -> AppendDecision[FactChangeReply | None]:
            if (existing := await self._knowledge.by_id(t, fact_id)) is not None:
                if existing.user_id != u:  # a derived id cannot collide across users; refuse rather than leak
                    raise NotAllowed("that idempotency key is taken")
                return AppendDecision(0, [], FactChangeReply(fact_id=fact_id, changed=False, fact=fact_info(existing)))
            return AppendDecision(
                await self._store.stream_version(stream), [_event(t, FACT_LEARNED.name, learned)], None
            )

        return await self._change(t, req.character_id, fact_id, decide)

    async def edit(self, req: FactEditRequest) -> FactChangeReply:
        t, u = req.tenant_id, req.user_id
        changes = {"text": req.text, "fact_type": req.fact_type, "tags": req.tags, "confidence": req.confidence}
        wanted = {k: v for k, v in changes.items() if v is not None}
        new_id = deterministic_id("knowledge.edit", t, req.fact_id, repr(sorted(wanted.items())))
        if (done := await self._knowledge.by_id(t, new_id)) is not None and done.user_id == u:
            # A retried edit: the old version is no longer current, but this very change was made.
            return FactChangeReply(fact_id=new_id, previous_fact_id=req.fact_id, changed=False, fact=fact_info(done))
        first = await self._current(t, u, req.fact_id)

        async def decide(stream: str) -> AppendDecision[FactChangeReply | None]:
            if (done := await self._knowledge.by_id(t, new_id)) is not None:
                reply = FactChangeReply(
                    fact_id=new_id, previous_fact_id=req.fact_id, changed=False, fact=fact_info(done)
                )
                return AppendDecision(0, [], reply)
            old = await self._current(t, u, req.fact_id)
            now = utcnow()
            retired = FactRetired(
                fact_id=old.fact_id, character_id=old.character_id, user_id=old.user_id, reason="edited",
                retired_at=now, by_user_id=u,
            )  # fmt: skip
            learned = FactLearned(
                fact_id=new_id,
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
            events = [_event(t, FACT_RETIRED.name, retired), _event(t, FACT_LEARNED.name, learned)]
            return AppendDecision(await self._store.stream_version(stream), events, None)

        reply = await self._change(t, first.character_id, new_id, decide)
        return reply.model_copy(update={"previous_fact_id": req.fact_id})

    async def retract(self, req: FactRetractRequest) -> FactChangeReply:
        t, u = req.tenant_id, req.user_id
        first = await self._owned(t, u, req.fact_id)

        async def decide(stream: str) -> AppendDecision[FactChangeReply | None]:
            fact = await self._owned(t, u, req.fact_id)
            if fact.status == "retired":
                return AppendDecision(0, [], FactChangeReply(fact_id=fact.fact_id, changed=False, fact=fact_info(fact)))
            if fact.status != ACTIVE:
                raise NotAllowed(f"fact {fact.fact_id!r} is {fact.status}; only current facts can be retracted")
            retired = FactRetired(
                fact_id=fact.fact_id, character_id=fact.character_id, user_id=fact.user_id, reason="retracted",
                retired_at=utcnow(), by_user_id=u,
            )  # fmt: skip
            return AppendDecision(
                await self._store.stream_version(stream), [_event(t, FACT_RETIRED.name, retired)], None
            )

        return await self._change(t, first.character_id, req.fact_id, decide)

    async def _change(self, tenant_id: str, character_id: str, fact_id: str, decide: _Decide) -> FactChangeReply:
        """Append what ``decide`` says (its value None: the change was made now) and answer the fact as it is."""
        stream = knowledge_stream(tenant_id, character_id)

        async def project(result: AppendResult) -> None:
            await self._knowledge.apply(result.committed)

        done = await append_with_retry(
            self._store, stream, lambda: decide(stream), publisher=self._publisher, project=project
        )
        if done.value is not None:
            return done.value
        fact = await self._knowledge.by_id(tenant_id, fact_id)
        return FactChangeReply(fact_id=fact_id, changed=True, fact=fact_info(fact) if fact else None)

    async def _owned(self, tenant_id: str, user_id: str, fact_id: str) -> FactView:
        fact = await self._knowledge.by_id(tenant_id, fact_id)
        if fact is None or fact.user_id != user_id:
            raise FactNotFound(f"no fact {fact_id!r} for this user")
        return fact

    async def _current(self, tenant_id: str, user_id: str, fact_id: str) -> FactView:
        fact = await self._owned(tenant_id, user_id, fact_id)
        if fact.status != ACTIVE:
            raise NotAllowed(f"fact {fact_id!r} is {fact.status}; only current facts can be edited")
        return fact


def _event(tenant_id: str, kind: str, payload: FactLearned | FactRetired) -> NewEvent:
    # Derived from the fact and the change, so an append retried after a lost reply is the same event.
    event_id = deterministic_id(kind, tenant_id, payload.fact_id, "manual")
    return new_event(payload, event_id=event_id, tenant_id=tenant_id)
