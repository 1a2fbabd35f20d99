"""Knowledge by hand (``mnemo.rpc.knowledge.fact.{list,add,edit,retract}.v1``): what a game master or operator
changes of what a character knows, each change an event in the character's knowledge stream, decided by the
knowledge aggregate (``mnemo.shared.aggregates.knowledge.changes``: the rules, ownership and ids).

Each append is at the version the read model was brought to before the fact was read (``caught_up.py``: a
concurrent change makes this one re-read and re-decide), projected into the knowledge read model at once so the
reply and the next read agree, then published, so the embedding service indexes (or drops) the fact like a
learned one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from mnemo.services.memory_extractor.caught_up import ReadModelCatchUp
from mnemo.shared.aggregates.knowledge import changes
from mnemo.shared.eventlog.port import EventStore
from mnemo.shared.eventlog.save import AppendDecision, EventSaver
from mnemo.shared.events.envelope import utcnow
from mnemo.shared.events.recorded import knowledge_stream
from mnemo.shared.readmodels.knowledge import FactView
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

#: One attempt's decision at the version the read model was brought to: a reply (nothing to append) or None
#: (appended now).
_Decide = Callable[[int], Awaitable[AppendDecision[FactChangeReply | None]]]


def fact_info(f: FactView) -> FactInfo:
    """The reply's fact: every field of ``FactInfo`` is the view's field of that name (the wire model says
    what is shown; the view's other fields, e.g. its tenant and owner, are not)."""
    return FactInfo.model_validate(f, from_attributes=True)


class ManualKnowledge:
    def __init__(self, store: EventStore, saver: EventSaver, knowledge: KnowledgePort) -> None:
        self._store = store
        self._saver = saver
        self._knowledge = knowledge
        self._catch_up = ReadModelCatchUp(store, knowledge)

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
        changes.checked_scope(req)  # refused before anything is read
        t, fact_id, now = req.tenant_id, changes.added_id(req), utcnow()

        async def decide(version: int) -> AppendDecision[FactChangeReply | None]:
            existing = await self._knowledge.by_id(t, fact_id)
            events = changes.add(req, existing, now)
            if existing is not None:
                return AppendDecision(0, [], FactChangeReply(fact_id=fact_id, changed=False, fact=fact_info(existing)))
            return AppendDecision(version, events, None)

        return await self._change(t, req.character_id, fact_id, decide)

    async def edit(self, req: FactEditRequest) -> FactChangeReply:
        t, u, new_id = req.tenant_id, req.user_id, changes.edited_id(req)
        if (done := await self._knowledge.by_id(t, new_id)) is not None and done.user_id == u:
            # A retried edit: the old version is no longer current, but this very change was made.
            return FactChangeReply(fact_id=new_id, previous_fact_id=req.fact_id, changed=False, fact=fact_info(done))
        first = await self._changeable(t, u, req.fact_id, "can be edited")

        async def decide(version: int) -> AppendDecision[FactChangeReply | None]:
            if (done := await self._knowledge.by_id(t, new_id)) is not None:
                reply = FactChangeReply(
                    fact_id=new_id, previous_fact_id=req.fact_id, changed=False, fact=fact_info(done)
                )
                return AppendDecision(0, [], reply)
            old = await self._changeable(t, u, req.fact_id, "can be edited")
            return AppendDecision(version, changes.edit(req, old, utcnow()), None)

        reply = await self._change(t, first.character_id, new_id, decide)
        return reply.model_copy(update={"previous_fact_id": req.fact_id})

    async def retract(self, req: FactRetractRequest) -> FactChangeReply:
        t, u = req.tenant_id, req.user_id
        first = changes.owned(await self._knowledge.by_id(t, req.fact_id), u, req.fact_id)

        async def decide(version: int) -> AppendDecision[FactChangeReply | None]:
            fact = changes.owned(await self._knowledge.by_id(t, req.fact_id), u, req.fact_id)
            events = changes.retract(req, fact, utcnow())
            if not events:
                return AppendDecision(0, [], FactChangeReply(fact_id=fact.fact_id, changed=False, fact=fact_info(fact)))
            return AppendDecision(version, events, None)

        return await self._change(t, first.character_id, req.fact_id, decide)

    async def _change(self, tenant_id: str, character_id: str, fact_id: str, decide: _Decide) -> FactChangeReply:
        """Append what ``decide`` says (its value None: the change was made now) and answer the fact as it is."""
        stream = knowledge_stream(tenant_id, character_id)

        async def at_log() -> AppendDecision[FactChangeReply | None]:
            return await decide((await self._catch_up.at_log(tenant_id, [stream]))[stream])

        done = await self._saver.save_decided(stream, at_log, project=self._knowledge.apply)
        if done.value is not None:
            return done.value
        fact = await self._knowledge.by_id(tenant_id, fact_id)
        return FactChangeReply(fact_id=fact_id, changed=True, fact=fact_info(fact) if fact else None)

    async def _changeable(self, tenant_id: str, user_id: str, fact_id: str, change: str) -> FactView:
        return changes.changeable(await self._knowledge.by_id(tenant_id, fact_id), user_id, fact_id, change)
