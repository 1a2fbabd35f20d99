"""``mnemo.rpc.memory.index_status.v1``: the tokens and vector points of listed items.

Answered here because the vector index is here (``memory.list`` is the memory service's, which has no index).
Each item's points are counted with a filter inside the index query: always the tenant and the item's kind and
id; summaries and legacy lore (a user's own) the user too. Facts and remembered memories are counted by their
id in the tenant, since the user may be shown one learned in another's scope (a campaign's, a character's);
only a count comes back, never a payload. Tokens are counted with the counter contexts use, so the figure is
what the item would take in a context.
"""

from __future__ import annotations

import asyncio

from mnemo.shared.tokens import TokenCounter
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import VectorFilter, VectorIndex
from mnemo_client.wire.memory_index_contract import (
    IndexSource,
    IndexStatus,
    IndexStatusQuery,
    MemoryIndexStatusReply,
    MemoryIndexStatusRequest,
)

#: Each source's point kind, the payload key holding the item's id, and whether the user owns every point.
_POINTS: dict[IndexSource, tuple[str, str, bool]] = {
    "memory": (vp.SUMMARY, vp.SUMMARY_ID, True),
    "legacy_lore": (vp.LEGACY_MEMORY, vp.LEGACY_ID, True),
    "knowledge": (vp.FACT, vp.FACT_ID, False),
    "remembered": (vp.MEMORY, vp.MEMORY_ID, False),
}


def point_filter(tenant_id: str, user_id: str, query: IndexStatusQuery) -> VectorFilter:
    """The points of one item, within the tenant (and the user, for a user's own kinds)."""
    kind, id_key, owned = _POINTS[query.source]
    equals = {vp.TENANT_ID: tenant_id, vp.KIND: kind, id_key: query.id}
    if owned:
        equals[vp.USER_ID] = user_id
    return VectorFilter.where(**equals)


class NoVectorIndex(Exception):
    """This deployment runs the context-assembler without a vector index: there is no status to give."""


class IndexStatuses:
    def __init__(self, index: VectorIndex | None, counter: TokenCounter) -> None:
        self._index = index
        self._counter = counter

    async def answer(self, req: MemoryIndexStatusRequest) -> MemoryIndexStatusReply:
        index = self._index
        if index is None:
            raise NoVectorIndex("this deployment has no vector index (MNEMO_VECTORS__*): no status to give")
        counts = await asyncio.gather(*(index.count(point_filter(req.tenant_id, req.user_id, q)) for q in req.items))
        return MemoryIndexStatusReply(
            items=[
                IndexStatus(
                    source=q.source,
                    id=q.id,
                    tokens=self._counter.count(q.text) if q.text else None,
                    vectors=n,
                    status="indexed" if n else "missing",
                )
                for q, n in zip(req.items, counts, strict=True)
            ]
        )
