"""Conversation reads (``mnemo.rpc.conversation.list.v1`` / ``timeline.v1``): the tenant's conversations, and one
conversation's messages with who was present, the summaries over them, the facts learned from them, their
swipes and the fork family.

Everything comes from the read models (messages, conversation state, profiles, summaries, knowledge) but the
swipes, folded from the conversation's log stream (``swipes.py``: no read model keeps them). A conversation of
another user or tenant is ``not_found`` like an unknown one.
"""

from __future__ import annotations

from collections.abc import Iterable

from mnemo.services.memory.domain import fold_swipes
from mnemo.services.memory.memories import MemoryNotFound
from mnemo.shared.aggregates.conversation import ConversationState
from mnemo.shared.eventlog.port import EventStore
from mnemo.shared.events.recorded import conversation_stream
from mnemo.shared.mapping import mapped
from mnemo.shared.readmodels.knowledge import FactView
from mnemo.shared.readmodels.ports import ConversationReadModel, KnowledgePort, SummariesPort
from mnemo_client.wire import conversation_contract as wire


class Conversations:
    def __init__(
        self, store: EventStore, read_models: ConversationReadModel, summaries: SummariesPort, knowledge: KnowledgePort
    ) -> None:
        self._store = store
        self._rm = read_models
        self._summaries = summaries
        self._knowledge = knowledge

    async def list_conversations(self, req: wire.ConversationListRequest) -> wire.ConversationListReply:
        states, total = await self._rm.listing(req.tenant_id, req.user_id, limit=req.limit, offset=req.offset)
        listed = [await self._listed(s) for s in states]
        return wire.ConversationListReply(conversations=listed, total=total, offset=req.offset, limit=req.limit)

    async def timeline(self, req: wire.ConversationTimelineRequest) -> wire.ConversationTimelineReply:
        t, u, c = req.tenant_id, req.user_id, req.conversation_id
        state = await self._rm.conversation(t, u, c)
        if state is None:
            raise MemoryNotFound(f"no conversation {c!r} for this user")
        end = req.from_index + req.limit
        views = await self._rm.message_range(t, u, c, req.from_index, end, include_deleted=True)
        swipes = fold_swipes(await self._store.read_stream(conversation_stream(t, u, c)))
        facts = _by_message(await self._knowledge.in_conversation(t, u, c))
        switches = {s.from_index for s in state.persona_switches}
        messages = [
            mapped(
                wire.TimelineMessage,
                m,
                present=state.bots_at(m.index) or list(m.bot_ids),
                persona_id=state.persona_at(m.index),
                persona_switch=m.index in switches,
                alternatives=swipes.get(m.message_id, []),
                facts=facts.get(m.message_id, []),
            )
            for m in views
        ]
        last = messages[-1].index if messages else req.from_index - 1
        summaries = [
            mapped(wire.TimelineSummary, s)
            for s in await self._summaries.live_summaries(t, u, c)
            if s.last_index >= req.from_index and s.first_index <= last
        ]
        return wire.ConversationTimelineReply(
            conversation=await self._listed(state),
            messages=messages,
            summaries=summaries,
            forks=await self._forks(state),
            next_index=end if state.message_count > end else None,
        )

    async def _listed(self, state: ConversationState) -> wire.ConversationInfo:
        t = state.tenant_id
        bot_ids = list(dict.fromkeys(b.bot_id for b in state.bots))
        persona_ids = list(dict.fromkeys(p.persona_id for p in state.persona_switches if p.persona_id))
        bots = [wire.Named(id=b, name=bot.name if (bot := await self._rm.bot(t, b)) else None) for b in bot_ids]
        personas = [
            wire.Named(id=p, name=persona.name if (persona := await self._rm.persona(t, state.user_id, p)) else None)
            for p in persona_ids
        ]
        return wire.ConversationInfo(
            user_id=state.user_id,
            conversation_id=state.conversation_id,
            messages=state.live_message_count,
            first_message_at=state.first_message_at,
            last_message_at=state.last_message_at,
            bots=bots,
            personas=personas,
            forked_from=state.forked_from,
        )

    async def _forks(self, state: ConversationState) -> list[wire.Fork]:
        family = await self._rm.family(state.tenant_id, state.user_id, state.conversation_id)
        if len(family) <= 1:
            return []
        ids = [conversation_stream(state.tenant_id, state.user_id, c) for c in sorted(family)]
        states = await self._rm.conversation_states(ids)
        return [
            wire.Fork(conversation_id=s.conversation_id, parent_conversation_id=s.forked_from, fork_index=s.fork_index)
            for s in states.values()
            if s.forked_from is not None and s.fork_index is not None
        ]


def _by_message(facts: Iterable[FactView]) -> dict[str, list[wire.TimelineFact]]:
    """Each fact at the last message it was learned from (where the platform's user would see it appear)."""
    found: dict[str, list[wire.TimelineFact]] = {}
    for f in facts:
        if not f.message_ids:
            continue
        found.setdefault(f.message_ids[-1], []).append(
            wire.TimelineFact(
                fact_id=f.fact_id,
                character_id=f.character_id,
                text=f.text,
                fact_type=f.fact_type,
                scope=f.scope,
                status=f.status,
                method=f.method,
            )
        )
    return found
