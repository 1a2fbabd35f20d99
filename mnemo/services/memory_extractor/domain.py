"""The memory-extractor's own pure part of witnessing: a batch's witnessings grouped into one append per
character stream (who witnessed what is the knowledge aggregate's decision, ``witnesses_of`` in
``mnemo.shared.aggregates.knowledge``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mnemo.shared.aggregates.knowledge import Witnessing
from mnemo.shared.eventlog.port import Append
from mnemo.shared.events.envelope import NewEvent


def group_appends(witnessings: Iterable[Witnessing], versions: dict[str, int]) -> list[Append]:
    """One ``Append`` per character stream, events in arrival order, repeated event ids dropped.

    ``versions`` holds each stream's current version (missing means 0, a new stream).
    """
    by_stream: dict[str, dict[str, NewEvent]] = {}
    for w in witnessings:
        by_stream.setdefault(w.stream_id, {}).setdefault(w.event.event_id, w.event)
    return [Append(sid, versions.get(sid, 0), list(events.values())) for sid, events in by_stream.items()]


def streams_of(witnessings: Sequence[Witnessing]) -> list[str]:
    return list(dict.fromkeys(w.stream_id for w in witnessings))
