"""A tenant's memory growth per type (``mnemo.rpc.ops.usage.v1`` with ``growth_days``): what it holds now and
what of it was made on each UTC day of a window, read from the read models, and its vector points per kind.

Each source is one read model collection with a live filter (what the listing would show), the field that
names the item's type and the field that says when it was made. ``held`` counts per type (a count each); the
days fetch only the window's rows and only their type and time fields (never a text, nothing is decrypted).
No collection has an index on its time field, so the database filters the tenant's rows (found by its
``tenant_id`` index) for the window: an operator's report, asked now and then, not a hot path. Counted here,
in the context-assembler, because it holds both the database and the vector index (``usage_report.py``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from mnemo.shared.readmodels import documents, knowledge, legacy_lore, memories, summaries
from mnemo.shared.readmodels.repository import MESSAGES
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import VectorFilter, VectorIndex
from mnemo_client.wire.ops_contract import DayCount, GrowthSource, MemoryTypeGrowth

Db = AsyncDatabase[dict[str, Any]]


@dataclass(frozen=True)
class Counted:
    """One kind of item: its collection, which rows are live, the field naming its type (None: ``fixed``) and
    the field saying when it was made."""

    source: GrowthSource
    collection: str
    made_at: str
    type_field: str | None = None
    fixed: str = ""
    live: dict[str, Any] = field(default_factory=dict)


SOURCES: tuple[Counted, ...] = (
    Counted("message", MESSAGES, "created_at", fixed="message", live={"deleted": {"$ne": True}}),
    Counted(
        "memory",
        summaries.COLLECTION,
        "end_at",
        type_field="summary_type",
        live={"status": {"$in": [None, summaries.ACTIVE]}, "text": {"$exists": True}},  # not a retirement stub
    ),
    Counted("legacy_lore", legacy_lore.COLLECTION, "created_at", fixed="legacy_memory", live={"deleted": False}),
    Counted("knowledge", knowledge.COLLECTION, "learned_at", type_field="fact_type", live={"status": knowledge.ACTIVE}),
    Counted("remembered", memories.COLLECTION, "occurred_at", type_field="memory_type"),  # a forgotten one is deleted
)


def window(until: date, days: int) -> tuple[date, datetime, datetime]:
    """The window's first day and its bounds as UTC instants (``until`` included)."""
    first = until - timedelta(days=days - 1)
    return first, datetime.combine(first, time(), UTC), datetime.combine(until + timedelta(days=1), time(), UTC)


def _day(value: Any) -> date | None:
    """The UTC day of a stored time (the driver hands back naive UTC datetimes)."""
    if not isinstance(value, datetime):
        return None
    return (value.astimezone(UTC) if value.tzinfo else value).date()


async def _source_growth(db: Db, tenant: str, src: Counted, start: datetime, end: datetime) -> list[MemoryTypeGrowth]:
    col = db[src.collection]
    live = {"tenant_id": tenant, **src.live}
    if src.type_field is None:
        held = {src.fixed: await col.count_documents(live)}
    else:
        types = sorted(str(t) for t in await col.distinct(src.type_field, live) if t is not None)
        held = {t: await col.count_documents({**live, src.type_field: t}) for t in types}
    added: Counter[tuple[str, date]] = Counter()
    shown = {src.made_at: 1, **({src.type_field: 1} if src.type_field else {})}
    async for row in col.find({**live, src.made_at: {"$gte": start, "$lt": end}}, shown):
        day = _day(row.get(src.made_at))
        if day is not None:
            added[(str(row.get(src.type_field)) if src.type_field else src.fixed, day)] += 1
    return [_row(src.source, kind, n, added) for kind, n in held.items() if n]


async def _chunk_growth(db: Db, tenant: str, start: datetime, end: datetime) -> list[MemoryTypeGrowth]:
    """Document chunks have no time of their own: a document's chunks count on the day its import completed."""
    held = await db[documents.CHUNKS].count_documents({"tenant_id": tenant})
    added: Counter[tuple[str, date]] = Counter()
    done = {"tenant_id": tenant, "status": "completed", "deleted": False, "updated_at": {"$gte": start, "$lt": end}}
    async for row in db[documents.DOCUMENTS].find(done, {"updated_at": 1, "chunks": 1}):
        day = _day(row.get("updated_at"))
        if day is not None:
            added[("document_chunk", day)] += int(row.get("chunks") or 0)
    return [_row("document_chunk", "document_chunk", held, added)] if held else []


def _row(source: GrowthSource, kind: str, held: int, added: Counter[tuple[str, date]]) -> MemoryTypeGrowth:
    days = sorted((day, n) for (k, day), n in added.items() if k == kind and n)
    return MemoryTypeGrowth(source=source, type=kind, held=held, added=[DayCount(day=d, added=n) for d, n in days])


async def memory_growth(db: Db, tenant: str, until: date, days: int) -> list[MemoryTypeGrowth]:
    """Each memory type the tenant holds, with what of it was made on each of the ``days`` up to ``until``."""
    _, start, end = window(until, days)
    rows: list[MemoryTypeGrowth] = []
    for src in SOURCES:
        rows += await _source_growth(db, tenant, src, start, end)
    return rows + await _chunk_growth(db, tenant, start, end)


async def vectors_by_kind(index: VectorIndex | None, tenant: str) -> dict[str, int]:
    """The tenant's points per kind (none without a vector index)."""
    if index is None:
        return {}
    return {kind: await index.count(VectorFilter.where(**{vp.TENANT_ID: tenant, vp.KIND: kind})) for kind in vp.KINDS}
