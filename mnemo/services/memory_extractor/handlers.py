"""Memory-extractor handlers: thin glue between the log consumer, the pure domain and the stores.

Contract: consumes every relayed log event on ``mnemo.log.>`` (stream ``MNEMO_LOG``, durable
``mnemo_memory_extractor_main``, explicit acks via :mod:`mnemo.shared.delivery`: ack after the effect is durable,
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
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import ValidationError

from mnemo.services.memory_extractor.appending import append_witnessings
from mnemo.services.memory_extractor.domain import Witnessing, witnesses_of
from mnemo.services.memory_extractor.learning import Learning, SourceMessage
from mnemo.services.memory_extractor.revisions import Revisions
from mnemo.services.memory_extractor.witnessed import WitnessedPort
from mnemo.shared.delivery import Item, Rejection
from mnemo.shared.deps import CommittedPublisher
from mnemo.shared.eventlog.append import MAX_CONFLICT_RETRIES
from mnemo.shared.eventlog.port import EventStore
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    FACT_LEARNED,
    FACT_PROMOTED,
    FACT_RETIRED,
    FACT_UNPROMOTED,
    FACTS_CONSOLIDATED,
    MESSAGE_DELETED,
    MESSAGE_EDITED,
    MESSAGE_RECORDED,
    MESSAGES_WITNESSED,
    REGISTRY,
    MessageDeleted,
    MessageEdited,
)
from mnemo.shared.llm.port import ProgressCallback

log = logging.getLogger(__name__)

__all__ = ["MAX_CONFLICT_RETRIES", "MemoryExtractor", "append_witnessings", "progress_of"]

Change = tuple[EventEnvelope, MessageEdited | MessageDeleted, str | None]


@dataclass
class _Sorted:
    """A batch's events sorted by what they are for; each ``on_*`` validates its payload first (a
    ``ValidationError`` rejects the message)."""

    witnessings: list[Witnessing] = field(default_factory=list)
    witnessed: list[EventEnvelope] = field(default_factory=list)
    facts: list[EventEnvelope] = field(default_factory=list)
    sources: list[SourceMessage] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    def on_recorded(self, item: Item[EventEnvelope]) -> None:
        env = item.value
        msg = MESSAGE_RECORDED.parse(env.payload)
        self.witnessings += witnesses_of(env.tenant_id, msg, causation_id=env.event_id, traceparent=item.traceparent)
        self.sources.append(SourceMessage(env, msg, item.traceparent))

    def on_witnessed(self, item: Item[EventEnvelope]) -> None:
        MESSAGES_WITNESSED.parse(item.value.payload)
        self.witnessed.append(item.value)

    def on_fact(self, item: Item[EventEnvelope]) -> None:
        REGISTRY.payload(item.value)
        self.facts.append(item.value)

    def on_edited(self, item: Item[EventEnvelope]) -> None:
        self.changes.append((item.value, MESSAGE_EDITED.parse(item.value.payload), item.traceparent))

    def on_deleted(self, item: Item[EventEnvelope]) -> None:
        self.changes.append((item.value, MESSAGE_DELETED.parse(item.value.payload), item.traceparent))


# Event type -> where the batch sorts it; other types are not this service's (acked, nothing done).
_SORT: dict[str, Callable[[_Sorted, Item[EventEnvelope]], None]] = {
    MESSAGE_RECORDED.name: _Sorted.on_recorded,
    MESSAGES_WITNESSED.name: _Sorted.on_witnessed,
    FACT_LEARNED.name: _Sorted.on_fact,
    FACTS_CONSOLIDATED.name: _Sorted.on_fact,
    FACT_RETIRED.name: _Sorted.on_fact,
    FACT_PROMOTED.name: _Sorted.on_fact,
    FACT_UNPROMOTED.name: _Sorted.on_fact,
    MESSAGE_EDITED.name: _Sorted.on_edited,
    MESSAGE_DELETED.name: _Sorted.on_deleted,
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
        witnessed: WitnessedPort,
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
        batch = _Sorted()
        for item in items:
            sort = _SORT.get(item.value.type)
            if sort is None:
                continue
            try:
                sort(batch, item)
            except ValidationError as exc:
                rejections.append(Rejection(item.msg, f"invalid {item.value.type} payload: {exc}"))
        await self._witnessed.apply(batch.witnessed)
        if batch.witnessings:
            committed = await append_witnessings(self._store, batch.witnessings)
            if committed:
                await self._publisher.publish_committed(committed)
        if self._learning is not None:
            await self._learn(items, batch.facts, batch.sources, batch.changes)
        return rejections

    async def _learn(
        self,
        items: list[Item[EventEnvelope]],
        facts: list[EventEnvelope],
        sources: list[SourceMessage],
        changes: list[Change],
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
