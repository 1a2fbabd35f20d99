"""Edits and deletes of a message make what was learned from it stale (issue item 7).

- The facts learned from the message (directly, or folded into a consolidation) get ``knowledge.fact_retired``
  (``stale`` after an edit, ``deleted``); event ids are deterministic over (fact, edit/delete event), so a
  redelivery appends nothing, and facts the same change taught are never retired by it.
- A retired consolidated fact is consolidated again from the facts it folded that did not come from that
  message, so what the character learned elsewhere stays known.
- After an edit, the new text is extracted again like a new message (``Learning.learn``), with the edit's
  event id in the fact ids, so they differ from the retired ones.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from mnemo.services.memory_extractor.curation import consolidated_fact, merge_extractive
from mnemo.services.memory_extractor.learning import Learning, SourceMessage
from mnemo.shared.aggregates.knowledge import Witnessing
from mnemo.shared.eventlog.port import EventStore
from mnemo.shared.events.envelope import EventEnvelope, deterministic_id, utcnow
from mnemo.shared.events.recorded import (
    FACT_RETIRED,
    MESSAGE_RECORDED,
    FactRetired,
    created_event_id,
    knowledge_stream,
    new_event,
)
from mnemo.shared.llm.port import ProgressCallback
from mnemo.shared.readmodels.knowledge import FactView, source_key
from mnemo.shared.readmodels.ports import KnowledgePort

log = logging.getLogger(__name__)


class Revisions:
    def __init__(self, store: EventStore, knowledge: KnowledgePort, learning: Learning) -> None:
        self._store = store
        self._knowledge = knowledge
        self._learning = learning

    async def on_changed(
        self,
        env: EventEnvelope,
        *,
        user_id: str,
        conversation_id: str,
        message_id: str,
        new_content: str | None,
        new_tokens: int = 0,
        traceparent: str | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> None:
        """Retire the facts learned from the message; after an edit (``new_content``) learn from the new text."""
        t = env.tenant_id
        derived = await self._knowledge.derived_from(t, user_id, conversation_id, message_id)
        stale = [f for f in derived if f.causation_id != env.event_id]  # not those this very change taught
        reason = "deleted" if new_content is None else "stale"
        pending = []
        for f in stale:
            retired = FactRetired(
                fact_id=f.fact_id,
                character_id=f.character_id,
                user_id=f.user_id,
                reason=reason,
                message_id=message_id,
                retired_at=env.occurred_at,
            )
            event = new_event(
                retired,
                event_id=deterministic_id(FACT_RETIRED.name, t, f.fact_id, env.event_id),
                tenant_id=t,
                occurred_at=env.occurred_at or utcnow(),
                causation_id=env.event_id,
                traceparent=traceparent,
            )
            pending.append(Witnessing(knowledge_stream(t, f.character_id), event))
        await self._learning.commit(pending)
        key = source_key(conversation_id, message_id)
        for f in stale:
            if f.consolidates:  # what it folded from other messages stays known
                await self._reconsolidate(env, f, await self._survivors(t, f.consolidates, key))
        if new_content is None:
            return
        found = await self._store.get_events([created_event_id(t, user_id, conversation_id, message_id)])
        if not found:
            log.warning("edited message %s not found in the log; nothing re-extracted", message_id)
            return
        original = MESSAGE_RECORDED.parse(found[0].payload)
        edited = original.model_copy(update={"content": new_content, "tokens": new_tokens})
        await self._learning.learn([SourceMessage(env, edited, traceparent, revision=env.event_id)], on_progress)

    async def _survivors(self, tenant_id: str, fact_ids: Sequence[str], key: str) -> list[FactView]:
        """The facts among ``fact_ids`` (and, through consolidations, below them) not derived from ``key``."""
        out: list[FactView] = []
        for f in await self._knowledge.by_ids(tenant_id, fact_ids):
            if key not in f.source_keys:
                out.append(f)
            elif f.consolidates:
                out += await self._survivors(tenant_id, f.consolidates, key)
        return out

    async def _reconsolidate(self, env: EventEnvelope, retired: FactView, survivors: list[FactView]) -> None:
        if not survivors:
            return
        survivors.sort(key=lambda f: (f.learned_at, f.fact_id))
        fact = consolidated_fact(
            env.tenant_id,
            survivors,
            character_kind=retired.character_kind,
            user_id=retired.user_id,
            conversation_id=retired.conversation_id,
            text=merge_extractive(survivors),
        )
        event = new_event(
            fact,
            event_id=fact.fact_id,
            tenant_id=env.tenant_id,
            occurred_at=fact.learned_at,
            causation_id=env.event_id,
        )
        await self._learning.commit([Witnessing(knowledge_stream(env.tenant_id, retired.character_id), event)])
