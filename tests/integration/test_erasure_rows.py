"""Erasure's row sweep on a real MongoDB-protocol server: a user's rows are picked from their tenant's (by owner
field, by book, or by a stream id alone) and deleted by ``_id`` in batches; nobody else's row goes, and the
tenant's sweep takes every row of the tenant. The queries must be ones SecantusDB serves from an index: the
plan of each is checked, since a query it cannot serve so reads the whole collection on every erasure."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pymongo import ASCENDING, AsyncMongoClient
from pymongo.asynchronous.collection import AsyncCollection

from mnemo.runtime.servers import ChildServer
from mnemo.services.privacy import rows
from mnemo.shared.events.envelope import stream_id

pytestmark = pytest.mark.integration

T, OTHER_TENANT = "t/1", "t-2"
ALICE, BOB = "alice", "bob"


@pytest.fixture
async def collection(mongo_server: ChildServer) -> AsyncIterator[AsyncCollection[dict[str, Any]]]:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongo_server.url)
    db = client[f"erase_rows_{uuid.uuid4().hex[:10]}"]
    await db["rows"].create_index([("tenant_id", ASCENDING), ("user_id", ASCENDING)])
    try:
        yield db["rows"]
    finally:
        await client.drop_database(db.name)
        await client.close()


def alice_rows() -> list[dict[str, Any]]:
    many = [{"_id": f"m{i}", "tenant_id": T, "user_id": ALICE} for i in range(rows.DELETE_BATCH + 7)]
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


async def ids(collection: AsyncCollection[dict[str, Any]]) -> set[Any]:
    return {d["_id"] async for d in collection.find({}, {"_id": 1})}


async def test_a_users_rows_go_and_nobody_elses(collection: AsyncCollection[dict[str, Any]]) -> None:
    await collection.insert_many(alice_rows() + others_rows())
    deleted = await rows.delete_rows(collection, T, ALICE, ["b-alice"])
    assert deleted == len(alice_rows())
    assert await ids(collection) == {d["_id"] for d in others_rows()}
    assert await rows.delete_rows(collection, T, ALICE, ["b-alice"]) == 0, "idempotent"


async def test_a_tenants_rows_all_go_and_no_other_tenants(collection: AsyncCollection[dict[str, Any]]) -> None:
    await collection.insert_many(alice_rows() + others_rows())
    kept = {d["_id"] for d in others_rows() if d["tenant_id"] == OTHER_TENANT}
    assert await rows.delete_rows(collection, T, None, []) == len(alice_rows()) + len(others_rows()) - len(kept)
    assert await ids(collection) == kept


async def test_the_sweeps_queries_are_served_by_an_index(collection: AsyncCollection[dict[str, Any]]) -> None:
    await collection.insert_many(alice_rows() + others_rows())
    for query in (rows.tenant_rows(T), {"_id": {"$in": ["m1", "m2"]}}):
        plan = (await collection.find(query).explain())["queryPlanner"]["winningPlan"]
        assert "COLLSCAN" not in str(plan), (query, plan)
