"""Memory-extractor handlers: thin glue between the log consumer, the pure domain and the stores.

Contract: consumes every relayed log event on ``mnemo.log.>`` (stream ``MNEMO_LOG``, durable
``mnemo_memory_extractor_main``, explicit acks via :mod:`shared.delivery`: ack after the effect is durable,
nak with backoff on failure, dead-letter invalid payloads).

- ``message.recorded`` → one ``knowledge.witnessed`` per (character present, message), appended for the whole
  fetched batch in ONE ``append_batch`` and then published. Idempotency key: the deterministic event id
  (see ``domain.witness_event_id``); the log reports a re-append as duplicates and nothing is published twice.
  Then the facts each character present learned (``learning.Learning.learn``).
- ``message.edited`` / ``message.deleted`` → the facts learned from that message are retired, and
  re-extracted from the new text after an edit (``revisions.Revisions.on_changed``).
- ``knowledge.witnessed`` → the ``witnessed`` read model; ``knowledge.fact_*`` / ``knowledge.facts_consolidated``
  → the ``knowledge`` read model (both idempotent).
"""

from __future__ import annotations

import contextlib
import logging

from pydantic import BaseModel, ValidationError

from services.memory_extractor.appending import append_witnessings
from services.memory_extractor.domain import Witnessing, witnesses_of
from services.memory_extractor.learning import Learning, Source
from services.memory_extractor.revisions import Revisions
from services.memory_extractor.witnessed import WitnessedReadModel
from shared.delivery import Item, Rejection
from shared.eventlog.append import MAX_CONFLICT_RETRIES
from shared.eventlog.port import EventStore
from shared.events.envelope import EventEnvelope
from shared.events.recorded import (
    FACT_LEARNED,
    FACT_PROMOTED,
    FACT_RETIRED,
    FACT_UNPROMOTED,
    FACTS_CONSOLIDATED,
    MESSAGE_DELETED,
    MESSAGE_EDITED,
    MESSAGE_RECORDED,
    MESSAGES_WITNESSED,
    FactLearned,
    FactRetired,
    FactsConsolidated,
    FactScopeChanged,
    MessageDeleted,
    MessageEdited,
    MessageRecorded,
    MessagesWitnessed,
)
from shared.llm.port import ProgressCallback
from shared.runtime import CommittedPublisher

log = logging.getLogger(__name__)

__all__ = ["MAX_CONFLICT_RETRIES", "MemoryExtractor", "append_witnessings", "progress_of"]

_FACT_MODELS: dict[str, type[BaseModel]] = {
    FACT_LEARNED.name: FactLearned,
    FACTS_CONSOLIDATED.name: FactsConsolidated,
    FACT_RETIRED.name: FactRetired,
    FACT_PROMOTED.name: FactScopeChanged,
    FACT_UNPROMOTED.name: FactScopeChanged,
}


def progress_of(items: list[Item[EventEnvelope]]) -> ProgressCallback:
    """Tell JetStream the batch's messages are still being worked on (long LLM calls)."""

    async def beat() -> None:
        for item in items:
            msg = item.msg
            if msg is None or msg.is_acked:
                continue
            with contextlib.suppress(Exception):
                await msg.in_progress()

    return beat


class MemoryExtractor:
    def __init__(
        self,
        store: EventStore,
        publisher: CommittedPublisher,
        witnessed: WitnessedReadModel,
        learning: Learning | None = None,
        revisions: Revisions | None = None,
    ) -> None:
        self._store = store
        self._publisher = publisher
        self._witnessed = witnessed
        self._learning = learning
        self._revisions = revisions

    async def on_batch(self, items: list[Item[EventEnvelope]]) -> list[Rejection]:
        rejections: list[Rejection] = []
        witnessings: list[Witnessing] = []
        witnessed: list[EventEnvelope] = []
        facts: list[EventEnvelope] = []
        sources: list[Source] = []
        changes: list[tuple[EventEnvelope, MessageEdited | MessageDeleted, str | None]] = []
        for item in items:
            env = item.value
            try:
                if env.type == MESSAGE_RECORDED.name:
                    msg = MessageRecorded.model_validate(env.payload)
                    witnessings += witnesses_of(
                        env.tenant_id, msg, causation_id=env.event_id, traceparent=item.traceparent
                    )
                    sources.append(Source(env, msg, item.traceparent))
                elif env.type == MESSAGES_WITNESSED.name:
                    MessagesWitnessed.model_validate(env.payload)
                    witnessed.append(env)
                elif env.type in _FACT_MODELS:
                    _FACT_MODELS[env.type].model_validate(env.payload)
                    facts.append(env)
                elif env.type == MESSAGE_EDITED.name:
                    changes.append((env, MessageEdited.model_validate(env.payload), item.traceparent))
                elif env.type == MESSAGE_DELETED.name:
                    changes.append((env, MessageDeleted.model_validate(env.payload), item.traceparent))
            except ValidationError as exc:
                rejections.append(Rejection(item.msg, f"invalid {env.type} payload: {exc}"))
        await self._witnessed.apply(witnessed)
        if witnessings:
            committed = await append_witnessings(self._store, witnessings)
            if committed:
                await self._publisher.publish_committed(committed)
        if self._learning is not None:
            await self._learn(items, facts, sources, changes)
        return rejections

    async def _learn(
        self,
        items: list[Item[EventEnvelope]],
        facts: list[EventEnvelope],
        sources: list[Source],
        changes: list[tuple[EventEnvelope, MessageEdited | MessageDeleted, str | None]],
    ) -> None:
        assert self._learning is not None
        await self._learning.project(facts)
        on_progress = progress_of(items)
        await self._learning.learn(sources, on_progress)
        if self._revisions is None:
            return
        for env, change, traceparent in changes:  # after the batch's new facts: an edit may retire them
            await self._revisions.on_changed(
                env,
                user_id=change.user_id,
                conversation_id=change.conversation_id,
                message_id=change.message_id,
                new_content=change.content if isinstance(change, MessageEdited) else None,
                new_tokens=change.tokens if isinstance(change, MessageEdited) else 0,
                traceparent=traceparent,
                on_progress=on_progress,
            )
