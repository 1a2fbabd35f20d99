"""Saving witnessings to many character streams at once, with optimistic concurrency retries."""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.services.memory_extractor.domain import group_appends, streams_of
from mnemo.shared.aggregates.knowledge import Witnessing
from mnemo.shared.eventlog.port import Append
from mnemo.shared.eventlog.save import EventSaver, Project
from mnemo.shared.events.envelope import EventEnvelope


async def save_witnessings(
    saver: EventSaver, witnessings: Sequence[Witnessing], *, project: Project | None = None
) -> list[EventEnvelope]:
    """Save all of them, one ``append_batch`` per attempt (``EventSaver.save_many``); streams that raced
    another writer are retried with fresh versions (events already written come back as duplicates), then
    ``project`` and the publish. Returns the newly committed."""

    async def decide(only: Sequence[str] | None) -> list[Append]:
        lost = set(only or ())
        pending = [w for w in witnessings if only is None or w.stream_id in lost]
        return group_appends(pending, await saver.store.stream_versions(streams_of(pending)))

    if not witnessings:
        return []
    return (await saver.save_many(decide, project=project)).committed
