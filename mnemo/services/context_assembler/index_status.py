"""``mnemo.rpc.memory.index_status.v1``: the tokens and vector points of listed items.

Answered here because the vector index is here (``memory.list`` is the memory service's, which has no index).
Each item's points are counted with a filter inside the index query: always the tenant and the item's kind and
id; summaries and legacy lore (a user's own) the user too. Facts and remembered memories are counted by their
id in the tenant, since the user may be shown one learned in another's scope (a campaign's, a character's);
only a count comes back, never a payload. Tokens are counted with the counter contexts use, so the figure is
what the item would take in a context. A missing item is ``pending`` while the embedding service's durable on
the log has events left (pending or unacknowledged): its point is likely not written yet. That backlog is the
deployment's, not the item's, so it says "not yet" rather than "never"; it is read only when an item is missing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from nats.errors import Error as NatsError
from nats.js.client import JetStreamContext

from mnemo.shared import subjects
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


#: The embedding service's events still to embed, or None when it cannot be read.
Backlog = Callable[[], Awaitable[int | None]]


#: The embedding service's durable on the log (``mnemo.shared.consumers``: ``mnemo_<service>_main``).
EMBEDDING_DURABLE = subjects.durable("embedding")
BACKLOG_TIMEOUT_S = 1.0
QUIET_S = 60.0


async def no_backlog() -> int | None:
    return None


def jetstream_backlog(
    jetstream: Callable[[], JetStreamContext], stream: str = subjects.LOG_STREAM, durable: str = EMBEDDING_DURABLE
) -> Backlog:
    """The embedding durable's pending plus unacknowledged events, read from JetStream (None when it cannot be:
    no such consumer yet, or a NATS user without the right to read it). A NATS user without the right gets no
    answer at all, only a timeout: after a timeout the backlog is not asked for again for ``QUIET_S``, so the
    status calls of such a deployment do not each wait for it."""
    quiet_until = 0.0

    async def backlog() -> int | None:
        nonlocal quiet_until
        if time.monotonic() < quiet_until:
            return None
        try:
            info = await jetstream().consumer_info(stream, durable, timeout=BACKLOG_TIMEOUT_S)
        except TimeoutError:
            quiet_until = time.monotonic() + QUIET_S
            return None
        except NatsError:  # no such stream or consumer (yet)
            return None
        return int(info.num_pending or 0) + int(info.num_ack_pending or 0)

    return backlog


class IndexStatuses:
    def __init__(self, index: VectorIndex | None, counter: TokenCounter, backlog: Backlog = no_backlog) -> None:
        self._index = index
        self._counter = counter
        self._backlog = backlog

    async def answer(self, req: MemoryIndexStatusRequest) -> MemoryIndexStatusReply:
        index = self._index
        if index is None:
            raise NoVectorIndex("this deployment has no vector index (MNEMO_VECTORS__*): no status to give")
        counts = await asyncio.gather(*(index.count(point_filter(req.tenant_id, req.user_id, q)) for q in req.items))
        backlog = await self._backlog() if not all(counts) else None
        return MemoryIndexStatusReply(
            items=[
                IndexStatus(
                    source=q.source,
                    id=q.id,
                    tokens=self._counter.count(q.text) if q.text else None,
                    vectors=n,
                    status="indexed" if n else "missing",
                    pending=not n and bool(backlog),
                )
                for q, n in zip(req.items, counts, strict=True)
            ],
            embedding_backlog=backlog,
        )
