"""TenantRows contract (privacy's erasure and export): InMemoryTenantRows and MongoTenantRows (SecantusDB, and a
real MongoDB when MONGODB_URL is set). A user's rows are picked from their tenant's (by owner field, by book, or
by a stream id alone) and deleted by ``_id`` in batches; nobody else's row goes, and the tenant's sweep takes
every row of the tenant. On a database the sweep's queries must be ones SecantusDB serves from an index: the
plan of each is checked, since a query it cannot serve so reads the whole collection on every erasure."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from pymongo import ASCENDING

from mnemo.shared.events.envelope import stream_id
from mnemo.shared.readmodels import rows
from mnemo.shared.readmodels.rows import InMemoryTenantRows, MongoTenantRows, TenantRows
from tests.contract.databases import BACKENDS, Database, backend, fresh_database

T, OTHER_TENANT = "t/1", "t-2"
ALICE, BOB = "alice", "bob"
ROWS = "rows"


@dataclass
class Subject:
    port: TenantRows
    insert: Callable[[list[dict[str, Any]]], Any]  # puts rows in the collection ROWS, as a read model would


def _in_memory() -> Subject:
    fake = InMemoryTenantRows()
    return Subject(fake, lambda docs: fake.insert(ROWS, docs))


async def _on_database(db: Database) -> Subject:
    await db[ROWS].create_index([("tenant_id", ASCENDING), ("user_id", ASCENDING)])
    return Subject(MongoTenantRows(db), db[ROWS].insert_many)


@pytest.fixture(params=BACKENDS)
async def subject(request: pytest.FixtureRequest) -> AsyncIterator[Subject]:
    async with backend(request, _in_memory, _on_database) as made:
        yield made


async def seeded(subject: Subject) -> TenantRows:
    inserted = subject.insert(alice_rows() + others_rows())
    if inserted is not None:
        await inserted
    return subject.port


def alice_rows() -> list[dict[str, Any]]:
    many = [{"_id": f"m{i:05}", "tenant_id": T, "user_id": ALICE} for i in range(rows.DELETE_BATCH + 7)]
    return [
        *many,  # more than one batch
        {"_id": "book", "tenant_id": T, "owner_user_id": ALICE, "lorebook_id": "b-alice"},
        {"_id": "attachment", "tenant_id": T, "lorebook_id": "b-alice", "target": "bot:x"},
        {"_id": stream_id("lore_timed", T, ALICE, "c1"), "tenant_id": T},  # keyed by her stream only
        {"_id": stream_id("persona", T, ALICE), "tenant_id": T},
    ]


def others_rows() -> list[dict[str, Any]]:
    return [
        {"_id": "bob", "tenant_id": T, "user_id": BOB},
        {"_id": "bob-book", "tenant_id": T, "owner_user_id": BOB, "lorebook_id": "b-bob"},
        {"_id": stream_id("lore_timed", T, ALICE + "2", "c1"), "tenant_id": T},
        {"_id": stream_id("bot", T, ALICE), "tenant_id": T},
        {"_id": "other-alice", "tenant_id": OTHER_TENANT, "user_id": ALICE, "lorebook_id": "b-alice"},
        {"_id": stream_id("lore_timed", OTHER_TENANT, ALICE, "c1"), "tenant_id": OTHER_TENANT},
    ]


async def ids(port: TenantRows, tenant_id: str) -> set[Any]:
    return {d["_id"] async for d in port.owned(ROWS, tenant_id, None)}


async def test_a_users_rows_go_and_nobody_elses(subject: Subject) -> None:
    port = await seeded(subject)
    deleted = await port.delete_owned(ROWS, T, ALICE, ["b-alice"])
    assert deleted == len(alice_rows())
    assert await ids(port, T) | await ids(port, OTHER_TENANT) == {d["_id"] for d in others_rows()}
    assert await port.delete_owned(ROWS, T, ALICE, ["b-alice"]) == 0, "idempotent"


async def test_a_tenants_rows_all_go_and_no_other_tenants(subject: Subject) -> None:
    port = await seeded(subject)
    kept = {d["_id"] for d in others_rows() if d["tenant_id"] == OTHER_TENANT}
    assert await port.delete_owned(ROWS, T, None, []) == len(alice_rows()) + len(others_rows()) - len(kept)
    assert await ids(port, T) == set()
    assert await ids(port, OTHER_TENANT) == kept


async def test_owned_rows_are_the_owners_by_their_field_in_id_order(subject: Subject) -> None:
    port = await seeded(subject)

    mine = [d["_id"] async for d in port.owned(ROWS, T, ALICE)]
    books = [d async for d in port.owned(ROWS, T, ALICE, by="owner_user_id")]
    tenant = [d["_id"] async for d in port.owned(ROWS, T, None)]

    assert mine == sorted(d["_id"] for d in alice_rows() if d.get("user_id") == ALICE)
    assert books == [{"_id": "book", "tenant_id": T, "owner_user_id": ALICE, "lorebook_id": "b-alice"}]
    assert tenant == sorted(d["_id"] for d in alice_rows() + others_rows() if d["tenant_id"] == T)
    assert [d async for d in port.owned("no_such_collection", T, ALICE)] == []


async def test_the_sweeps_queries_are_served_by_an_index(request: pytest.FixtureRequest) -> None:
    async with fresh_database(request, "secantusdb") as db:
        await _on_database(db)
        await db[ROWS].insert_many(alice_rows() + others_rows())
        for query in (rows.tenant_rows(T), {"_id": {"$in": ["m00001", "m00002"]}}):
            plan = (await db[ROWS].find(query).explain())["queryPlanner"]["winningPlan"]
            assert "COLLSCAN" not in str(plan), (query, plan)
