"""Promotion of a player's fact to a campaign and back, each change an audit event in the log.

Contract: ``mnemo.rpc.memory.promote.v1`` / ``mnemo.rpc.memory.unpromote.v1`` (models in
``mnemo_client.wire.memory_contract``). The owner namespace is (tenant, user): a fact of another tenant or of
another user is ``not_found`` (existence does not leak). Only a current fact can change scope; only a fact
in the requester's ``player:<user>`` scope can be promoted; unpromote brings a promoted fact back to
``player:<user>``. A request already in effect changes nothing and appends nothing. A change is
``knowledge.fact_promoted`` / ``knowledge.fact_unpromoted`` (who, from, to, when) in the character's stream
``knowledge/<tenant>/<character>``, decided by the knowledge aggregate (``changes.scope_change``) and appended
at the version the read model was brought to before the fact was read (a concurrent change makes one writer
re-read and re-decide), projected at once so the reply and the next read agree, then published.
"""

from __future__ import annotations

from mnemo.services.memory_extractor.caught_up import ReadModelCatchUp
from mnemo.shared.aggregates.knowledge import changes
from mnemo.shared.eventlog.port import EventStore
from mnemo.shared.eventlog.save import AppendDecision, EventSaver
from mnemo.shared.events.envelope import new_id, utcnow
from mnemo.shared.events.recorded import campaign_scope, knowledge_stream, player_scope
from mnemo.shared.readmodels.knowledge import FactView
from mnemo.shared.readmodels.ports import KnowledgePort
from mnemo_client.wire.memory_contract import MemoryPromoteRequest, MemoryScopeReply, MemoryUnpromoteRequest


class Promotions:
    def __init__(self, store: EventStore, saver: EventSaver, knowledge: KnowledgePort) -> None:
        self._store = store
        self._saver = saver
        self._knowledge = knowledge
        self._catch_up = ReadModelCatchUp(store, knowledge)

    async def promote(self, req: MemoryPromoteRequest) -> MemoryScopeReply:
        to_scope = campaign_scope(req.campaign_id)
        return await self._change_scope(req.tenant_id, req.user_id, req.fact_id, to_scope, promote=True)

    async def unpromote(self, req: MemoryUnpromoteRequest) -> MemoryScopeReply:
        to_scope = player_scope(req.user_id)
        return await self._change_scope(req.tenant_id, req.user_id, req.fact_id, to_scope, promote=False)

    async def _change_scope(
        self, tenant_id: str, user_id: str, fact_id: str, to_scope: str, *, promote: bool
    ) -> MemoryScopeReply:
        """Bring the read model to the log, read the fact, decide, append the audit event at the version it was
        brought to (``caught_up.py``); a concurrent change makes it re-read and re-decide."""
        named = await self._changeable(tenant_id, user_id, fact_id)  # names the stream (and refuses early)
        stream = knowledge_stream(tenant_id, named.character_id)

        async def decide() -> AppendDecision[MemoryScopeReply]:
            version = (await self._catch_up.at_log(tenant_id, [stream]))[stream]
            fact = await self._changeable(tenant_id, user_id, fact_id)
            event = changes.scope_change(
                tenant_id, fact, by_user_id=user_id, to_scope=to_scope, promote=promote, at=utcnow(), event_id=new_id()
            )
            if event is None:  # already in effect: nothing to append
                unchanged = MemoryScopeReply(
                    fact_id=fact.fact_id, scope=to_scope, previous_scope=to_scope, changed=False
                )
                return AppendDecision(0, [], unchanged)
            reply = MemoryScopeReply(fact_id=fact.fact_id, scope=to_scope, previous_scope=fact.scope, changed=True)
            return AppendDecision(version, [event], reply)

        done = await self._saver.save_decided(stream, decide, project=self._knowledge.apply)
        return done.value

    async def _changeable(self, tenant_id: str, user_id: str, fact_id: str) -> FactView:
        return changes.changeable(await self._knowledge.by_id(tenant_id, fact_id), user_id, fact_id, "change scope")
