"""What the operators' usage report (``mnemo.rpc.ops.usage.v1``) counts of a tenant's rows, read through one
port, :class:`UsageCounts`: its metered usage per UTC day (the ``usage`` collection, ``mnemo.shared.usage``),
its messages, and its memory growth per type (what it holds now, what of it was made on each day of a window).

The counting is written once, over three primitives (count, distinct, find with a MongoDB filter):
``MongoUsageCounts`` asks the database, ``InMemoryUsageCounts`` evaluates the same filters on rows put in per
collection, as the read models' adapters store them; one contract suite runs both
(``tests/contract/test_usage_counts_contract.py``).

Each growth source is one read-model collection with a live filter (what the listing would show), the field
that names the item's type and the field that says when it was made. ``held`` counts per type (a count each);
the days fetch only the window's rows and only their type and time fields (never a text, nothing is
decrypted). No collection has an index on its time field, so the database filters the tenant's rows (found by
its ``tenant_id`` index) for the window: an operator's report, asked now and then, not a hot path.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from pymongo.asynchronous.database import AsyncDatabase

from mnemo.shared import usage
from mnemo.shared.aggregates.knowledge import ACTIVE
from mnemo.shared.readmodels import documents, knowledge, legacy_lore, memories, summaries
from mnemo.shared.readmodels.repository import MESSAGES
from mnemo_client.wire.ops_contract import DayCount, GrowthSource, MemoryTypeGrowth

Row = dict[str, Any]
Query = dict[str, Any]


@dataclass(frozen=True)
class Counted:
    """One kind of item: its collection, which rows are live, the field naming its type (None: ``fixed``) and
    the field saying when it was made."""

    source: GrowthSource
    collection: str
    made_at: str
    type_field: str | None = None
    fixed: str = ""
    live: Query = field(default_factory=dict)


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
    Counted("knowledge", knowledge.COLLECTION, "learned_at", type_field="fact_type", live={"status": ACTIVE}),
    Counted("remembered", memories.COLLECTION, "occurred_at", type_field="memory_type"),  # a forgotten one is deleted
)


def window(until: date, days: int) -> tuple[date, datetime, datetime]:
    """The window's first day and its bounds as UTC instants (``until`` included)."""
    first = until - timedelta(days=days - 1)
    return first, datetime.combine(first, time(), UTC), datetime.combine(until + timedelta(days=1), time(), UTC)


def in_period(since: date | None, until: date | None) -> Query:
    """The ``usage`` rows of the UTC days ``since`` .. ``until`` (either open)."""
    days = {op: day.isoformat() for op, day in (("$gte", since), ("$lte", until)) if day}
    return {"day": days} if days else {}


def _day(value: Any) -> date | None:
    """The UTC day of a stored time (the driver hands back naive UTC datetimes)."""
    if not isinstance(value, datetime):
        return None
    return (value.astimezone(UTC) if value.tzinfo else value).date()


def _row(source: GrowthSource, kind: str, held: int, added: Counter[tuple[str, date]]) -> MemoryTypeGrowth:
    days = sorted((day, n) for (k, day), n in added.items() if k == kind and n)
    return MemoryTypeGrowth(source=source, type=kind, held=held, added=[DayCount(day=d, added=n) for d, n in days])


class UsageCounts(Protocol):
    """A tenant's rows as the usage report counts them (the rows are never decrypted: only counts and times)."""

    async def metered_tenants(self, since: date | None, until: date | None) -> list[str]:
        """Every tenant with metered usage on a day of the period, sorted."""
        ...

    async def metered(self, tenants: Sequence[str], since: date | None, until: date | None) -> dict[str, Row]:
        """Each of ``tenants``' :data:`~mnemo.shared.usage.METERED` counts summed over the period (0: none)."""
        ...

    async def messages(self, tenant: str) -> int:
        """The message rows the tenant holds (a deleted message keeps its row)."""
        ...

    async def growth(self, tenant: str, start: datetime, end: datetime) -> list[MemoryTypeGrowth]:
        """Each memory type the tenant holds, with what of it was made on each UTC day in ``start`` .. ``end``."""
        ...


class _Counting:
    """The port written once over three primitives, which each adapter answers its own way."""

    async def _count(self, collection: str, query: Query) -> int:
        raise NotImplementedError

    async def _distinct(self, collection: str, key: str, query: Query) -> list[Any]:
        raise NotImplementedError

    def _find(self, collection: str, query: Query, fields: Iterable[str]) -> AsyncIterator[Row]:
        raise NotImplementedError

    async def metered_tenants(self, since: date | None, until: date | None) -> list[str]:
        return sorted(await self._distinct(usage.COLLECTION, "tenant_id", in_period(since, until)))

    async def metered(self, tenants: Sequence[str], since: date | None, until: date | None) -> dict[str, Row]:
        counts: dict[str, Row] = {t: dict.fromkeys(usage.METERED, 0) for t in tenants}
        query = {"tenant_id": {"$in": list(tenants)}, **in_period(since, until)}
        async for row in self._find(usage.COLLECTION, query, ("tenant_id", *usage.METERED)):
            for key in usage.METERED:
                counts[row["tenant_id"]][key] += int(row.get(key, 0))
        return counts

    async def messages(self, tenant: str) -> int:
        return await self._count(MESSAGES, {"tenant_id": tenant})

    async def growth(self, tenant: str, start: datetime, end: datetime) -> list[MemoryTypeGrowth]:
        rows: list[MemoryTypeGrowth] = []
        for src in SOURCES:
            rows += await self._source_growth(tenant, src, start, end)
        return rows + await self._chunk_growth(tenant, start, end)

    async def _source_growth(self, tenant: str, src: Counted, start: datetime, end: datetime) -> list[MemoryTypeGrowth]:
        live = {"tenant_id": tenant, **src.live}
        if src.type_field is None:
            held = {src.fixed: await self._count(src.collection, live)}
        else:
            types = sorted(str(t) for t in await self._distinct(src.collection, src.type_field, live) if t is not None)
            held = {t: await self._count(src.collection, {**live, src.type_field: t}) for t in types}
        added: Counter[tuple[str, date]] = Counter()
        shown = (src.made_at, *([src.type_field] if src.type_field else []))
        async for row in self._find(src.collection, {**live, src.made_at: {"$gte": start, "$lt": end}}, shown):
            day = _day(row.get(src.made_at))
            if day is not None:
                added[(str(row.get(src.type_field)) if src.type_field else src.fixed, day)] += 1
        return [_row(src.source, kind, n, added) for kind, n in held.items() if n]

    async def _chunk_growth(self, tenant: str, start: datetime, end: datetime) -> list[MemoryTypeGrowth]:
        """Document chunks have no time of their own: a document's chunks count on the day its import completed."""
        held = await self._count(documents.CHUNKS, {"tenant_id": tenant})
        added: Counter[tuple[str, date]] = Counter()
        done = {"tenant_id": tenant, "status": "completed", "deleted": False, "updated_at": {"$gte": start, "$lt": end}}
        async for row in self._find(documents.DOCUMENTS, done, ("updated_at", "chunks")):
            day = _day(row.get("updated_at"))
            if day is not None:
                added[("document_chunk", day)] += int(row.get("chunks") or 0)
        return [_row("document_chunk", "document_chunk", held, added)] if held else []


class MongoUsageCounts(_Counting):
    def __init__(self, db: AsyncDatabase[Row]) -> None:
        self._db = db

    async def _count(self, collection: str, query: Query) -> int:
        return await self._db[collection].count_documents(query)

    async def _distinct(self, collection: str, key: str, query: Query) -> list[Any]:
        return await self._db[collection].distinct(key, query)

    async def _find(self, collection: str, query: Query, fields: Iterable[str]) -> AsyncIterator[Row]:
        async for row in self._db[collection].find(query, dict.fromkeys(fields, 1)):
            yield row


class InMemoryUsageCounts(_Counting):
    """Rows held per collection in memory (``insert`` puts them there, as the read models' adapters would)."""

    def __init__(self) -> None:
        self._collections: dict[str, list[Row]] = {}

    def insert(self, collection: str, rows: Iterable[Row]) -> None:
        self._collections.setdefault(collection, []).extend(dict(row) for row in rows)

    def _matching(self, collection: str, query: Query) -> list[Row]:
        return [row for row in self._collections.get(collection, []) if _matches(row, query)]

    async def _count(self, collection: str, query: Query) -> int:
        return len(self._matching(collection, query))

    async def _distinct(self, collection: str, key: str, query: Query) -> list[Any]:
        return list(dict.fromkeys(row[key] for row in self._matching(collection, query) if key in row))

    async def _find(self, collection: str, query: Query, fields: Iterable[str]) -> AsyncIterator[Row]:
        for row in self._matching(collection, query):
            yield {key: row[key] for key in fields if key in row}


_MISSING = object()


def _utc(value: Any) -> Any:
    """A stored time as MongoDB compares it: a naive one is UTC."""
    return value.replace(tzinfo=UTC) if isinstance(value, datetime) and value.tzinfo is None else value


def _matches(row: Row, query: Query) -> bool:
    """``row`` against a MongoDB filter of the shapes this module writes: equality, ``$ne``, ``$in`` (None also
    matches a missing field, as in MongoDB), ``$exists`` and the range operators (values of another type never
    match)."""
    for key, wanted in query.items():
        value = row.get(key, _MISSING)
        conditions = wanted if isinstance(wanted, dict) else {"$eq": wanted}
        if not all(_holds(op, _utc(value), _utc(arg)) for op, arg in conditions.items()):
            return False
    return True


def _holds(op: str, value: Any, arg: Any) -> bool:
    present = value is not _MISSING
    if op == "$exists":
        return present == bool(arg)
    if op in ("$eq", "$ne"):
        equal = (value if present else None) == arg
        return equal if op == "$eq" else not equal
    if op == "$in":
        return (value if present else None) in arg
    if not present or type(value) is not type(arg):
        return False
    compared: dict[str, bool] = {"$gte": value >= arg, "$gt": value > arg, "$lte": value <= arg, "$lt": value < arg}
    return compared[op]


if TYPE_CHECKING:  # both adapters satisfy the port (checked by mypy)

    def _adapters(db: AsyncDatabase[Row]) -> tuple[UsageCounts, UsageCounts]:
        return MongoUsageCounts(db), InMemoryUsageCounts()
