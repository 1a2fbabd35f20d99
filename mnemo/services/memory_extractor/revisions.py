"""Edits and deletes of a message make what was learned from it stale (issue item 7): the facts learned from it
are retired and what a retired consolidation folded from other messages is consolidated again, as the knowledge
aggregate decides (``mnemo.shared.aggregates.knowledge.revisions``); after an edit, the new text is extracted
again like a new message (``Learning.learn``), with the edit's event id in the fact ids, so they differ from the
retired ones.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from mnemo.services.memory_extractor.learning import Learning, SourceMessage
from mnemo.shared.aggregates.knowledge import revisions
from mnemo.shared.eventlog.port import EventStore
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import MESSAGE_RECORDED, created_event_id
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
        stale = revisions.stale_facts(derived, env.event_id)
        retired = revisions.retirements(
            t, stale, message_id=message_id, deleted=new_content is None, change_event_id=env.event_id,
            at=env.occurred_at, traceparent=traceparent,
        )  # fmt: skip
        await self._learning.commit(retired)
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
        again = revisions.reconsolidation(env.tenant_id, retired, survivors, change_event_id=env.event_id)
        if again is not None:
            await self._learning.commit([again])
