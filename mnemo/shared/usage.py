"""Per-tenant usage, which platforms bill on: never a metric label (the metrics stay bounded), a report instead.

What a service consumes for a tenant (:data:`METERED`: context requests and their tokens, LLM tokens) is
added to :data:`USAGE` in memory, per tenant and UTC day (a dict increment: nothing per message reaches the
database), and flushed every :data:`FLUSH_S` into the ``usage`` collection, one ``$inc`` upsert per tenant
and day, and once more when the process stops; a crash (``kill -9``) loses at most the last ``FLUSH_S`` of
counts, a failed flush is kept for the next. What a tenant holds (its messages, its vectors) is counted when
the report is asked for (``mnemo.rpc.ops.usage.v1``, ``mnemo status --usage``), from the read model and the
vector index, so it is exact.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from pymongo import ASCENDING, IndexModel, UpdateOne
from pymongo.asynchronous.database import AsyncDatabase

from mnemo.shared.tasks import in_background

log = logging.getLogger(__name__)

COLLECTION = "usage"
#: The counts services add (the report's metered fields).
METERED = ("context_requests", "context_tokens", "llm_prompt_tokens", "llm_completion_tokens")
FLUSH_S = 10.0
#: By tenant and day: the report's reads, and erasure's sweep of a tenant's rows (it is in the projection catalog's
#: ``UNPROJECTED``: not a projection of the log, but a tenant's rows all the same).
INDEXES = (IndexModel([("tenant_id", ASCENDING), ("day", ASCENDING)]),)


def today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


class UsageMeter:
    def __init__(self) -> None:
        self._pending: defaultdict[tuple[str, str], defaultdict[str, int]] = defaultdict(lambda: defaultdict(int))

    def add(self, tenant_id: str, **counts: int | None) -> None:
        """Add ``counts`` (fields of :data:`METERED`; None and 0 are skipped) to the tenant's usage today."""
        bucket = self._pending[(tenant_id, today())]
        for field, count in counts.items():
            if count:
                bucket[field] += count

    async def flush(self, db: AsyncDatabase[dict[str, Any]]) -> None:
        """Write what was counted since the last flush; on failure it is kept for the next one."""
        pending, self._pending = self._pending, defaultdict(lambda: defaultdict(int))
        if not pending:
            return
        writes = [
            UpdateOne(
                {"_id": f"{tenant}|{day}"},
                {"$inc": dict(counts), "$setOnInsert": {"tenant_id": tenant, "day": day}},
                upsert=True,
            )
            for (tenant, day), counts in pending.items()
            if counts
        ]
        try:
            if writes:
                await db[COLLECTION].bulk_write(writes, ordered=False)
        except Exception:
            for key, counts in pending.items():  # back in front of what was counted meanwhile
                for field, count in counts.items():
                    self._pending[key][field] += count
            raise

    async def run(self, db: AsyncDatabase[dict[str, Any]], every_s: float = FLUSH_S) -> None:
        """Flush every ``every_s`` until cancelled, then once more."""
        try:
            while True:
                await asyncio.sleep(every_s)
                try:
                    await self.flush(db)
                except Exception as exc:
                    log.warning("writing usage counts failed, kept for the next flush: %s", exc)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.flush(db))


#: The process's meter (``make run`` hosts every service in one process: one meter, one flush).
USAGE = UsageMeter()


async def ensure_usage_indexes(db: AsyncDatabase[dict[str, Any]]) -> None:
    await db[COLLECTION].create_indexes(list(INDEXES))


@contextlib.asynccontextmanager
async def flushing(db: AsyncDatabase[dict[str, Any]]) -> Any:
    """The meter flushed in the background while the block runs, and once more at its end."""
    async with in_background(USAGE.run(db)):
        yield


_ACTING_FOR: contextvars.ContextVar[str | None] = contextvars.ContextVar("mnemo_usage_tenant", default=None)


@contextlib.contextmanager
def acting_for(tenant_id: str) -> Iterator[None]:
    """What the block consumes (the LLM tokens it spends) is the tenant's: set where a service works for one
    tenant (the summarizer per event, the extractor per tenant of a batch)."""
    token = _ACTING_FOR.set(tenant_id)
    try:
        yield
    finally:
        _ACTING_FOR.reset(token)


def record_llm(prompt_tokens: int | None, completion_tokens: int | None) -> None:
    """The tokens one LLM answer spent, on the tenant the caller acts for (none: not counted per tenant)."""
    tenant = _ACTING_FOR.get()
    if tenant is not None:
        USAGE.add(tenant, llm_prompt_tokens=prompt_tokens, llm_completion_tokens=completion_tokens)
