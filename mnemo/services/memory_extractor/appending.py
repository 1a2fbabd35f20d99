"""Appending events to many character streams at once, with optimistic concurrency retries."""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.services.memory_extractor.domain import group_appends, streams_of
from mnemo.shared.aggregates.knowledge import Witnessing
from mnemo.shared.eventlog.append import MAX_CONFLICT_RETRIES, ConflictRetriesExhausted
from mnemo.shared.eventlog.port import ConcurrencyError, EventStore
from mnemo.shared.events.envelope import EventEnvelope


async def append_witnessings(store: EventStore, witnessings: Sequence[Witnessing]) -> list[EventEnvelope]:
    """Append all of them, one ``append_batch`` per attempt; streams that raced another writer are retried
    with fresh versions (events already written come back as duplicates). Returns the newly committed.

    Not ``mnemo.shared.eventlog.append.append_with_retry``: that one retries one stream, this one retries only the
    streams of a batch that lost their race, in one round trip per attempt. Publishing is the caller's."""
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
        raise ConflictRetriesExhausted(pending[0].stream_id, MAX_CONFLICT_RETRIES)
    return committed
