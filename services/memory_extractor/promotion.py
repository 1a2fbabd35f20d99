"""Promotion of a player's fact to a campaign and back, each change an audit event in the log.

Contract: ``mnemo.rpc.memory.promote.v1`` / ``mnemo.rpc.memory.unpromote.v1`` (models in
``shared.events.memory_contract``). The owner namespace is (tenant, user): a fact of another tenant or of
another user is ``not_found`` (existence does not leak). Only a current fact can change scope; only a fact
in the requester's ``player:<user>`` scope can be promoted; unpromote brings a promoted fact back to
``player:<user>``. A request already in effect changes nothing and appends nothing. A change is
``knowledge.fact_promoted`` / ``knowledge.fact_unpromoted`` (who, from, to, when) in the character's stream
``knowledge/<tenant>/<character>``, appended against the stream's version (a concurrent change makes one
writer re-read and re-decide), projected at once so the reply and the next read agree, then published.
"""

from __future__ import annotations

from shared.eventlog.port import ConcurrencyError, EventStore
from shared.events.envelope import NewEvent, new_id, utcnow
from shared.events.memory_contract import MemoryPromoteRequest, MemoryScopeReply, MemoryUnpromoteRequest
from shared.events.recorded import (
    FACT_PROMOTED,
    FACT_UNPROMOTED,
    FactPromoted,
    FactUnpromoted,
    campaign_scope,
    knowledge_stream,
    player_scope,
)
from shared.readmodels.knowledge import ACTIVE, FactView
from shared.readmodels.ports import KnowledgePort
from shared.runtime import CommittedPublisher

MAX_CONFLICT_RETRIES = 5


class NotFound(LookupError):
    """No such fact for this tenant and user."""


class NotAllowed(ValueError):
    """The fact's state does not allow the change (answered as ``bad_request`` with the reason)."""


class Promotions:
    def __init__(self, store: EventStore, publisher: CommittedPublisher, knowledge: KnowledgePort) -> None:
        self._store = store
        self._publisher = publisher
        self._knowledge = knowledge

    async def promote(self, req: MemoryPromoteRequest) -> MemoryScopeReply:
        target = campaign_scope(req.campaign_id)
        for _ in range(MAX_CONFLICT_RETRIES):
            fact = await self._owned_fact(req.tenant_id, req.user_id, req.fact_id)
            if fact.scope == target:
                return MemoryScopeReply(fact_id=fact.fact_id, scope=target, previous_scope=target, changed=False)
            if fact.scope != player_scope(req.user_id):
                raise NotAllowed(f"only facts in your player scope can be promoted; this one is in {fact.scope}")
            if await self._change(req.tenant_id, req.user_id, fact, target, promote=True):
                return MemoryScopeReply(fact_id=fact.fact_id, scope=target, previous_scope=fact.scope, changed=True)
        raise ConcurrencyError(req.fact_id, -1)

    async def unpromote(self, req: MemoryUnpromoteRequest) -> MemoryScopeReply:
        home = player_scope(req.user_id)
        for _ in range(MAX_CONFLICT_RETRIES):
            fact = await self._owned_fact(req.tenant_id, req.user_id, req.fact_id)
            if fact.scope == home:
                return MemoryScopeReply(fact_id=fact.fact_id, scope=home, previous_scope=home, changed=False)
            if not fact.scope.startswith("campaign:"):
                raise NotAllowed(f"only promoted facts can be unpromoted; this one is in {fact.scope}")
            if await self._change(req.tenant_id, req.user_id, fact, home, promote=False):
                return MemoryScopeReply(fact_id=fact.fact_id, scope=home, previous_scope=fact.scope, changed=True)
        raise ConcurrencyError(req.fact_id, -1)

    async def _owned_fact(self, tenant_id: str, user_id: str, fact_id: str) -> FactView:
        fact = await self._knowledge.by_id(tenant_id, fact_id)
        if fact is None or fact.user_id != user_id:
            raise NotFound(f"no fact {fact_id!r} for this user")
        if fact.status != ACTIVE:
            raise NotAllowed(f"fact {fact_id!r} is {fact.status}; only current facts change scope")
        return fact

    async def _change(self, tenant_id: str, user_id: str, fact: FactView, to_scope: str, *, promote: bool) -> bool:
        """Append the audit event; False when another writer changed the stream meanwhile (re-decide)."""
        model = FactPromoted if promote else FactUnpromoted
        payload = model(
            fact_id=fact.fact_id,
            character_id=fact.character_id,
            owner_user_id=fact.user_id,
            by_user_id=user_id,
            from_scope=fact.scope,
            to_scope=to_scope,
            at=utcnow(),
        )
        event = NewEvent(
            event_id=new_id(),
            type=(FACT_PROMOTED if promote else FACT_UNPROMOTED).name,
            tenant_id=tenant_id,
            payload=payload.model_dump(mode="json"),
        )
        stream = knowledge_stream(tenant_id, fact.character_id)
        version = await self._store.stream_version(stream)
        try:
            result = await self._store.append(stream, version, [event])
        except ConcurrencyError:
            return False
        await self._knowledge.apply(result.committed)
        await self._publisher.publish_committed(result.committed)
        return True
