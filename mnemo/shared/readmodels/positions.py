"""Per stream, the version a projection holds every event of it through (a catch-up position).

A projection applied by many writers, each right after its own append and again when the relay brings the
events back, holds the log's events out of order for a moment. Its highest applied version therefore says
nothing about the versions below it: only a reader that applied a stream's events in order from a known
position, or a writer that appended at such a position and projected its append, may move the position
(``mnemo.services.memory_extractor.caught_up``). Rows carry ``tenant_id`` and hold no user's data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pymongo import UpdateOne
from pymongo.asynchronous.collection import AsyncCollection

from mnemo.shared.readmodels.repository import _bulk


class StreamPositions:
    """Positions in one collection: ``{_id: stream id, tenant_id, version}``."""

    def __init__(self, collection: AsyncCollection[dict[str, Any]]) -> None:
        self._col = collection

    async def of(self, tenant_id: str, streams: Sequence[str]) -> dict[str, int]:
        """Each stream's position (0: none recorded)."""
        query = {"tenant_id": tenant_id, "_id": {"$in": list(streams)}}
        found = {d["_id"]: int(d["version"]) async for d in self._col.find(query)}
        return {s: found.get(s, 0) for s in streams}

    async def advance(self, tenant_id: str, versions: Mapping[str, int]) -> None:
        """Move each stream's position up to its version (``$max``: never back). Two writers inserting one new
        position at once: one loses on ``_id``, which ``_bulk`` tolerates. A position left lower than it could
        be is still true (the next catch-up reads a few events more)."""
        ops = [
            UpdateOne({"_id": s, "tenant_id": tenant_id}, {"$max": {"version": v}}, upsert=True)
            for s, v in versions.items()
        ]
        await _bulk(self._col, ops, ordered=False)
