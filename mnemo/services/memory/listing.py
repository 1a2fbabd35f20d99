"""Pure parts of ``mnemo.rpc.memory.list.v1``: which sources a request reads, and the merged page.

The view is the union of up to three sources (summaries, legacy lore, knowledge facts), each already sorted
by the listing order (newest ``end_at`` first, then id). A page at ``offset`` of the union needs at most the
first ``offset + limit`` items of each source, so each source is asked for exactly that prefix; the merge then
keeps ``[offset, offset + limit)``. The order is total (ids are unique), so consecutive pages neither skip nor
repeat items while nothing changes, and ``total`` is the sum of the sources' totals.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from mnemo_client.wire.memory_contract import LEGACY_MEMORY, MemoryItem, MemoryListRequest

SUMMARY_TYPES = frozenset({"short_term", "long_term", "consolidated"})
FACT_TYPES = frozenset({"episodic", "semantic", "declarative", "procedural"})
_OLDEST = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Sources:
    summaries: bool
    legacy: bool
    knowledge: bool


def sources_for(req: MemoryListRequest) -> Sources:
    """The sources a request can match. ``converted_to_lore`` only applies to summaries (the memories that
    can be converted), so when it is set the other sources are left out."""
    memory = req.source in ("memory", "all")
    knowledge = req.source in ("knowledge", "all")
    only_summaries = req.converted_to_lore is not None
    return Sources(
        summaries=memory and (req.type is None or req.type in SUMMARY_TYPES),
        legacy=memory and not only_summaries and (req.type is None or req.type == LEGACY_MEMORY),
        knowledge=knowledge and not only_summaries and (req.type is None or req.type in FACT_TYPES),
    )


def order_key(item: MemoryItem) -> tuple[float, str]:
    """Newest ``end_at`` first (items without one last), then id."""
    end = item.end_at or _OLDEST
    if end.tzinfo is None:
        end = end.replace(tzinfo=UTC)
    return (-end.timestamp(), item.id)


def merge_page(prefixes: Sequence[Sequence[MemoryItem]], offset: int, limit: int) -> list[MemoryItem]:
    """Items ``[offset, offset + limit)`` of the union of ``prefixes``, each a sorted prefix of its source
    holding at least its first ``offset + limit`` items (or all of them)."""
    merged = heapq.merge(*(sorted(p, key=order_key) for p in prefixes), key=order_key)
    return list(itertools.islice(merged, offset, offset + limit))
