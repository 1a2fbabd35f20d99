"""Memory-extractor handlers: thin glue between the log consumer, the pure domain and the stores.

Contract: consumes the log events of :data:`HANDLERS` (stream ``MNEMO_LOG``, durable
``mnemo_memory_extractor_main`` filtering their subjects, explicit acks via :mod:`mnemo.shared.delivery`: ack after the effect is durable,
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
from dataclasses import dataclass, field

from mnemo.services.memory_extractor.appending import save_witnessings
from mnemo.services.memory_extractor.learning import Learning, SourceMessage
from mnemo.services.memory_extractor.revisions import Revisions
from mnemo.shared.aggregates.knowledge import Witnessing, witnesses_of
from mnemo.shared.delivery import Item, Rejection
from mnemo.shared.eventlog.save import EventSaver
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    FactLearned,
    FactPromoted,
    FactRetired,
    FactsConsolidated,
    FactUnpromoted,
    MessageDeletionRecorded,
    MessageEditRecorded,
    MessageRecorded,
    MessagesWitnessed,
    RecordedPayload,
)
from mnemo.shared.llm.port import ProgressCallback
from mnemo.shared.readmodels.witnessed import WitnessedPort
from mnemo.shared.subscriptions import Delivered, EventHandlers

log = logging.getLogger(__name__)

__all__ = ["HANDLERS", "MemoryExtractor", "progress_of"]

Change = tuple[EventEnvelope, MessageEditRecorded | MessageDeletionRecorded, str | None]


@dataclass
class _Sorted:
    """A batch's events sorted by what they are for (log order within each)."""

    witnessings: list[Witnessing] = field(default_factory=list)
    witnessed: list[EventEnvelope] = field(default_factory=list)
    facts: list[EventEnvelope] = field(default_factory=list)
    sources: list[SourceMessage] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    def on_recorded(self, event: Delivered[MessageRecorded]) -> None:
        env, msg = event.envelope, event.payload
        self.witnessings += witnesses_of(env.tenant_id, msg, causation_id=env.event_id, traceparent=event.traceparent)
        self.sources.append(SourceMessage(env, msg, event.traceparent))

    def on_witnessed(self, event: Delivered[MessagesWitnessed]) -> None:
        self.witnessed.append(event.envelope)

    def on_fact(self, event: Delivered[RecordedPayload]) -> None:
        self.facts.append(event.envelope)

    def on_changed(self, event: Delivered[MessageEditRecorded | MessageDeletionRecorded]) -> None:
        self.changes.append((event.envelope, event.payload, event.traceparent))


#: The memory-extractor's events: its durable filters these alone (``mnemo.shared.subscriptions``).
HANDLERS: EventHandlers[_Sorted] = (
    EventHandlers[_Sorted]()
    .on(MessageRecorded, _Sorted.on_recorded)
    .on(MessagesWitnessed, _Sorted.on_witnessed)
    .on(FactLearned, _Sorted.on_fact)
    .on(FactsConsolidated, _Sorted.on_fact)
    .on(FactRetired, _Sorted.on_fact)
    .on(FactPromoted, _Sorted.on_fact)
    .on(FactUnpromoted, _Sorted.on_fact)
    .on(MessageEditRecorded, _Sorted.on_changed)
    .on(MessageDeletionRecorded, _Sorted.on_changed)
)


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


@dataclass(eq=False)
class MemoryExtractor:
    saver: EventSaver
    witnessed: WitnessedPort
    learning: Learning | None = None
    revisions: Revisions | None = None

    async def on_batch(self, items: list[Item[EventEnvelope]]) -> list[Rejection]:
        batch = _Sorted()
        rejections = await HANDLERS.dispatch(batch, items)
        await self.witnessed.apply(batch.witnessed)
        if batch.witnessings:
            await save_witnessings(self.saver, batch.witnessings)
        if self.learning is not None:
            await self._learn(items, batch.facts, batch.sources, batch.changes)
        return rejections

    async def _learn(
        self,
        items: list[Item[EventEnvelope]],
        facts: list[EventEnvelope],
        sources: list[SourceMessage],
        changes: list[Change],
    ) -> None:
        assert self.learning is not None
        await self.learning.project(facts)
        on_progress = progress_of(items)
        await self.learning.learn(sources, on_progress)
        if self.revisions is None:
            return
        for env, change, traceparent in changes:  # after the batch's new facts: an edit may retire them
            await self.revisions.on_changed(
                env,
                user_id=change.user_id,
                conversation_id=change.conversation_id,
                message_id=change.message_id,
                new_content=change.content if isinstance(change, MessageEditRecorded) else None,
                new_tokens=change.tokens if isinstance(change, MessageEditRecorded) else 0,
                traceparent=traceparent,
                on_progress=on_progress,
            )
