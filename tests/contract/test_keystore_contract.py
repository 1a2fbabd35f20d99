"""KeyStore contract: InMemoryKeyStore and MongoKeyStore (SecantusDB, and real MongoDB when MONGODB_URL is set)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from shared.crypto import FieldCipher, InMemoryKeyStore, KeyStore, WrappedKey
from shared.eventlog.keystore import MongoKeyStore


@pytest.fixture(params=["inmemory", "secantusdb", "mongodb"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[KeyStore]:
    if request.param == "inmemory":
        yield InMemoryKeyStore()
        return
    from pymongo import AsyncMongoClient

    url = (
        request.getfixturevalue("mongo_url")
        if request.param == "secantusdb"
        else request.getfixturevalue("real_mongodb_url")
    )
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(url)
    name = f"t_{uuid.uuid4().hex[:12]}"
    try:
        yield MongoKeyStore(client[name])
    finally:
        await client.drop_database(name)
        await client.close()


async def test_missing_tenant_has_no_key(store: KeyStore) -> None:
    assert await store.get("nobody") is None


async def test_first_writer_wins_and_later_writers_get_the_winner(store: KeyStore) -> None:
    first = WrappedKey("t1", "k1", b"\x01" * 44)
    second = WrappedKey("t1", "k2", b"\x02" * 44)

    assert await store.put_if_absent(first) == first
    assert await store.put_if_absent(second) == first
    assert await store.get("t1") == first


async def test_racing_writers_all_end_up_with_one_key(store: KeyStore) -> None:
    candidates = [WrappedKey("t1", f"k{i}", bytes([i]) * 44) for i in range(10)]

    winners = await asyncio.gather(*(store.put_if_absent(k) for k in candidates))

    assert len(set(winners)) == 1
    assert await store.get("t1") == winners[0]


async def test_tenants_keep_separate_keys(store: KeyStore) -> None:
    await store.put_if_absent(WrappedKey("a", "ka", b"a" * 44))
    await store.put_if_absent(WrappedKey("b", "kb", b"b" * 44))

    assert (await store.get("a"), await store.get("b")) == (
        WrappedKey("a", "ka", b"a" * 44),
        WrappedKey("b", "kb", b"b" * 44),
    )


async def test_ciphers_on_separate_processes_share_the_tenant_key(store: KeyStore) -> None:
    kek = bytes(range(32))
    one, two = FieldCipher(kek, store), FieldCipher(kek, store)
    c1, c2 = await asyncio.gather(one.for_tenant("t"), two.for_tenant("t"))

    assert c2.decrypt("r", "f", c1.encrypt("r", "f", "shared")) == "shared"
