"""Promotion of a player's fact to a campaign and back, each change an audit event in the log.

Contract: ``mnemo.rpc.memory.promote.v1`` / ``mnemo.rpc.memory.unpromote.v1`` (models in
``mnemo_client.wire.memory_contract``). The owner namespace is (tenant, user): a fact of another tenant or of
another user is ``not_found`` (existence does not leak). Only a current fact can change scope; only a fact
in the requester's ``player:<user>`` scope can be promoted; unpromote brings a promoted fact back to
``player:<user>``. A request already in effect changes nothing and appends nothing. A change is
``knowledge.fact_promoted`` / ``knowledge.fact_unpromoted`` (who, from, to, when) in the character's stream
``knowledge/<tenant>/<character>``, appended against the stream's version (a concurrent change makes one
writer re-read and re-decide), projected at once so the reply and the next read agree, then published.
"""

from __future__ import annotations

from collections.abc import Callable

from mnemo.shared.deps import CommittedPublisher
from mnemo.shared.eventlog.append import AppendDecision, append_with_retry
from mnemo.shared.eventlog.port import AppendResult, EventStore
from mnemo.shared.events.envelope import NewEvent, new_id, utcnow
from mnemo.shared.events.recorded import (
    FactPromoted,
    FactUnpromoted,
    campaign_scope,
    knowledge_stream,
    new_event,
    player_scope,
)
from mnemo.shared.readmodels.knowledge import ACTIVE, FactView
from mnemo.shared.readmodels.ports import KnowledgePort
from mnemo_client.wire.memory_contract import MemoryPromoteRequest, MemoryScopeReply, MemoryUnpromoteRequest


class FactNotFound(LookupError):
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

        def decide(fact: FactView) -> MemoryScopeReply | None:
            if fact.scope == target:
                return MemoryScopeReply(fact_id=fact.fact_id, scope=target, previous_scope=target, changed=False)
            if fact.scope != player_scope(req.user_id):
                raise NotAllowed(f"only facts in your player scope can be promoted; this one is in {fact.scope}")
            return None

        return await self._change_scope(req.tenant_id, req.user_id, req.fact_id, target, decide, promote=True)

    async def unpromote(self, req: MemoryUnpromoteRequest) -> MemoryScopeReply:
        home = player_scope(req.user_id)

        def decide(fact: FactView) -> MemoryScopeReply | None:
            if fact.scope == home:
                return MemoryScopeReply(fact_id=fact.fact_id, scope=home, previous_scope=home, changed=False)
            if not fact.scope.startswith("campaign:"):
                raise NotAllowed(f"only promoted facts can be unpromoted; this one is in {fact.scope}")
            return None

        return await self._change_scope(req.tenant_id, req.user_id, req.fact_id, home, decide, promote=False)

    async def _change_scope(
        self,
        tenant_id: str,
        user_id: str,
        fact_id: str,
        to_scope: str,
        already: Callable[[FactView], MemoryScopeReply | None],
        *,
        promote: bool,
    ) -> MemoryScopeReply:
        """Read the fact, decide (``already``: the reply when nothing is to change, or raises), append the audit
        event at the character stream's version; a concurrent change makes it re-read and re-decide."""
        loaded = [await self._owned_fact(tenant_id, user_id, fact_id)]  # the first attempt's read; names the stream
        stream = knowledge_stream(tenant_id, loaded[0].character_id)

        async def decide() -> AppendDecision[MemoryScopeReply]:
            fact = loaded.pop() if loaded else await self._owned_fact(tenant_id, user_id, fact_id)
            unchanged = already(fact)
            if unchanged is not None:
                return AppendDecision(0, [], unchanged)
            version = await self._store.stream_version(stream)
            reply = MemoryScopeReply(fact_id=fact.fact_id, scope=to_scope, previous_scope=fact.scope, changed=True)
            return AppendDecision(version, [self._event(tenant_id, user_id, fact, to_scope, promote=promote)], reply)

        async def project(result: AppendResult) -> None:
            await self._knowledge.apply(result.committed)

        done = await append_with_retry(self._store, stream, decide, publisher=self._publisher, project=project)
        return done.value

    async def _owned_fact(self, tenant_id: str, user_id: str, fact_id: str) -> FactView:
        fact = await self._knowledge.by_id(tenant_id, fact_id)
        if fact is None or fact.user_id != user_id:
            raise FactNotFound(f"no fact {fact_id!r} for this user")
        if fact.status != ACTIVE:
            raise NotAllowed(f"fact {fact_id!r} is {fact.status}; only current facts change scope")
        return fact

    @staticmethod
    def _event(tenant_id: str, user_id: str, fact: FactView, to_scope: str, *, promote: bool) -> NewEvent:
        """The audit event of the change (who, from which scope, to which, when)."""
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
        return new_event(
            payload,
            event_id=new_id(),
            tenant_id=tenant_id,
        )
