"""UsageCounts contract (the operators' usage report): InMemoryUsageCounts and MongoUsageCounts (SecantusDB, and a
real MongoDB when MONGODB_URL is set). The metered counts are summed per tenant over a period of UTC days; the
messages are the tenant's rows; the memory growth counts exactly a tenant's own live items per type, and per
day of the window what was made then (a property over random tenants), nothing deleted, retired or outside it."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import pytest

from mnemo.shared import usage
from mnemo.shared.readmodels.catalog import ensure_indexes
from mnemo.shared.readmodels.repository import MESSAGES
from mnemo.shared.readmodels.usage_counts import InMemoryUsageCounts, MongoUsageCounts, UsageCounts, window
from tests.contract.databases import BACKENDS, Database, backend
from tests.growth_rows import DAYS, UNTIL, counted, grown


@dataclass
class Subject:
    port: UsageCounts
    insert: Callable[[str, list[dict[str, Any]]], Awaitable[Any]]  # rows into a collection, as a read model would


def _in_memory() -> Subject:
    fake = InMemoryUsageCounts()

    async def insert(collection: str, rows: list[dict[str, Any]]) -> None:
        fake.insert(collection, rows)

    return Subject(fake, insert)


async def _on_database(db: Database) -> Subject:
    await ensure_indexes(db)
    await usage.ensure_usage_indexes(db)
    return Subject(MongoUsageCounts(db), lambda collection, rows: db[collection].insert_many(rows))


@pytest.fixture(params=BACKENDS)
async def subject(request: pytest.FixtureRequest) -> AsyncIterator[Subject]:
    async with backend(request, _in_memory, _on_database, tz_aware=True) as made:
        yield made


def _metered(tenant: str, day: str, **counts: int) -> dict[str, Any]:
    return {"_id": f"{tenant}|{day}", "tenant_id": tenant, "day": day, **counts}


async def test_metered_counts_are_summed_per_tenant_over_the_period(subject: Subject) -> None:
    await subject.insert(
        usage.COLLECTION,
        [
            _metered("a", "2026-11-01", context_requests=2, context_tokens=100),
            _metered("a", "2026-11-02", context_requests=3, llm_prompt_tokens=7),
            _metered("a", "2026-11-05", context_requests=50),
            _metered("b", "2026-10-31", llm_completion_tokens=9),
            _metered("c", "2026-11-02", context_tokens=1),
        ],
    )
    port, nov1, nov2 = subject.port, date(2026, 11, 1), date(2026, 11, 2)

    assert await port.metered_tenants(None, None) == ["a", "b", "c"]
    assert await port.metered_tenants(nov1, nov2) == ["a", "c"]
    assert await port.metered_tenants(None, date(2026, 10, 31)) == ["b"]
    assert await port.metered_tenants(date(2026, 11, 3), None) == ["a"]
    counts = await port.metered(["a", "b", "nobody"], nov1, nov2)
    zero = dict.fromkeys(usage.METERED, 0)
    assert counts == {
        "a": zero | {"context_requests": 5, "context_tokens": 100, "llm_prompt_tokens": 7},
        "b": zero,  # its usage is outside the period
        "nobody": zero,
    }
    assert (await port.metered(["a"], None, None))["a"]["context_requests"] == 55


async def test_messages_are_the_tenants_rows_deleted_ones_too(subject: Subject) -> None:
    rows = [{"_id": f"m{i}", "tenant_id": "a", "deleted": i == 0} for i in range(3)]
    await subject.insert(MESSAGES, [*rows, {"_id": "other", "tenant_id": "b"}])
    assert [await subject.port.messages(t) for t in ("a", "b", "nobody")] == [3, 1, 0]


async def test_each_tenants_growth_is_its_own_live_items_per_type_and_day(subject: Subject) -> None:
    rng = random.Random(31)
    tenants = [f"t{n}" for n in range(8)]
    expected = {t: grown(rng, t) for t in tenants}
    for made in expected.values():
        for collection, rows in made.rows.items():
            await subject.insert(collection, rows)
    _, start, end = window(UNTIL, DAYS)

    for tenant, made in expected.items():
        growth = await subject.port.growth(tenant, start, end)
        assert counted(growth) == (dict(made.held), dict(made.added)), tenant
        assert all([d.day for d in g.added] == sorted(d.day for d in g.added) for g in growth)
    assert await subject.port.growth("nobody", start, end) == []
    later = window(UNTIL + timedelta(days=30), DAYS)
    assert all(g.added == [] for g in await subject.port.growth(tenants[0], later[1], later[2]))
