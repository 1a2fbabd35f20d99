"""Memory-extractor handlers: thin glue between the log consumer, the pure domain and the stores.

Contract: consumes every relayed log event on ``mnemo.log.>`` (stream ``MNEMO_LOG``, durable
``mnemo_memory_extractor_main``, explicit acks via :mod:`shared.delivery`: ack after the effect is durable,
nak with backoff on failure, dead-letter invalid payloads).

- ``message.recorded`` → one ``knowledge.witnessed`` per (character present, message), appended for the whole
  fetched batch in ONE ``append_batch`` and then published. Idempotency key: the deterministic event id
  (see ``domain.witness_event_id``); the log reports a re-append as duplicates and nothing is published twice.
- ``knowledge.witnessed`` → the ``witnessed`` read model (idempotent upsert keyed by event id).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pydantic import ValidationError

from services.memory_extractor.domain import Witnessing, group_appends, streams_of, witnesses_of
from shared.delivery import Item, Rejection
from shared.eventlog.port import ConcurrencyError, EventStore
from shared.events.envelope import EventEnvelope
from shared.events.recorded import MESSAGE_RECORDED, MESSAGES_WITNESSED, MessageRecorded, MessagesWitnessed
from shared.readmodels.witnessed import WitnessedReadModel
from shared.runtime import CommittedPublisher

log = logging.getLogger(__name__)

MAX_CONFLICT_RETRIES = 5


async def append_witnessings(store: EventStore, witnessings: Sequence[Witnessing]) -> list[EventEnvelope]:
    """Append all of them, one ``append_batch`` per attempt; streams that raced another writer are retried
    with fresh versions (events already written come back as duplicates). Returns the newly committed."""
    committed: list[EventEnvelope] = []
    pending = list(witnessings)
    for _ in range(MAX_CONFLICT_RETRIES):
        if not pending:
            return committed
        streams = streams_of(pending)
        versions = await store.stream_versions(streams)
        appends = group_appends(pending, versions)
        results = await store.append_batch(appends)
        conflicted: set[str] = set()
        for append, result in zip(appends, results, strict=True):
            if isinstance(result, ConcurrencyError):
                conflicted.add(append.stream_id)
            else:
                committed.extend(result.committed)
        pending = [w for w in pending if w.stream_id in conflicted]
    if pending:
        raise ConcurrencyError(pending[0].stream_id, -1)
    return committed


class MemoryExtractor:
    def __init__(self, store: EventStore, publisher: CommittedPublisher, witnessed: WitnessedReadModel) -> None:
        self._store = store
        self._publisher = publisher
        self._witnessed = witnessed

    async def on_batch(self, items: list[Item[EventEnvelope]]) -> list[Rejection]:
        rejections: list[Rejection] = []
        witnessings: list[Witnessing] = []
        witnessed: list[EventEnvelope] = []
        for item in items:
            env = item.value
            try:
                if env.type == MESSAGE_RECORDED.name:
                    msg = MessageRecorded.model_validate(env.payload)
                    witnessings += witnesses_of(
                        env.tenant_id, msg, causation_id=env.event_id, traceparent=item.traceparent
                    )
                elif env.type == MESSAGES_WITNESSED.name:
                    MessagesWitnessed.model_validate(env.payload)
                    witnessed.append(env)
            except ValidationError as exc:
                rejections.append(Rejection(item.msg, f"invalid {env.type} payload: {exc}"))
        await self._witnessed.apply(witnessed)
        if witnessings:
            committed = await append_witnessings(self._store, witnessings)
            if committed:
                await self._publisher.publish_committed(committed)
        return rejections
