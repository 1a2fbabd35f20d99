"""KeyStore contract: InMemoryKeyStore and MongoKeyStore (SecantusDB, and real MongoDB when MONGODB_URL is set)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore, KeyStore, WrappedKey
from mnemo.shared.eventlog.keystore import MongoKeyStore
from mnemo.shared.keys import user_scope
from tests.contract.databases import BACKENDS, Database, backend


async def _on_mongo(db: Database) -> KeyStore:
    keys = MongoKeyStore(db)
    await keys.ensure_indexes()
    return keys


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest) -> AsyncIterator[KeyStore]:
    async with backend(request, InMemoryKeyStore, _on_mongo) as keys:
        yield keys


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


async def test_keys_are_found_by_id_whatever_their_scope(store: KeyStore) -> None:
    a, b = WrappedKey("t", "ka", b"a" * 44), WrappedKey(user_scope("t", "u"), "kb", b"b" * 44)
    await store.put_if_absent(a)
    await store.put_if_absent(b)

    assert sorted(await store.find(["kb", "ka", "nope"]), key=lambda k: k.key_id) == [a, b]


async def test_destroying_a_users_keys_leaves_tombstones_and_the_others(store: KeyStore) -> None:
    tenant, alice, bob = (
        WrappedKey("t", "k0", b"0" * 44),
        WrappedKey(user_scope("t", "alice"), "k1", b"1" * 44),
        (WrappedKey(user_scope("t", "bob"), "k2", b"2" * 44)),
    )
    for key in (tenant, alice, bob):
        await store.put_if_absent(key)

    assert await store.destroy(user_scope("t", "alice")) == ["k1"]
    assert await store.destroy(user_scope("t", "alice")) == [], "a repeat destroys nothing more"

    assert await store.get(user_scope("t", "alice")) is None
    assert await store.find(["k1"]) == []
    assert await store.destroyed(["k0", "k1", "k2"]) == {"k1"}
    assert sorted(k.key_id for k in await store.all()) == ["k0", "k2"]


async def test_destroying_a_tenant_takes_every_scope_of_it_only(store: KeyStore) -> None:
    for key in (
        WrappedKey("t", "k0", b"0" * 44),
        WrappedKey(user_scope("t", "alice"), "k1", b"1" * 44),
        WrappedKey("t2", "k2", b"2" * 44),
        WrappedKey(user_scope("t2", "alice"), "k3", b"3" * 44),
    ):
        await store.put_if_absent(key)

    assert sorted(await store.destroy("t", whole_tenant=True)) == ["k0", "k1"]
    assert sorted(k.key_id for k in await store.all()) == ["k2", "k3"]


async def test_a_user_key_created_after_erasure_is_a_new_one(store: KeyStore) -> None:
    kek = bytes(range(32))
    cipher = FieldCipher(kek, store)
    first = await cipher.for_tenant("t", "u")
    await cipher.erase("t", "u")
    assert (await FieldCipher(kek, store).for_tenant("t", "u")).key_id != first.key_id


async def test_a_rotated_out_key_stays_findable_until_its_scope_is_destroyed(store: KeyStore) -> None:
    scope = user_scope("t", "u")
    old, new = WrappedKey(scope, "k-old", b"o" * 44), WrappedKey(scope, "k-new", b"n" * 44)
    await store.put_if_absent(old)

    await store.rotate(scope, new)
    await store.rotate(scope, new)  # a retried rotation changes nothing more

    assert await store.get(scope) == new
    assert sorted(await store.find(["k-old", "k-new"]), key=lambda k: k.key_id) == [new, old]
    assert sorted(await store.destroy(scope)) == ["k-new", "k-old"]
    assert await store.all() == []


async def test_rewrap_replaces_a_keys_wrapping_once(store: KeyStore) -> None:
    key = WrappedKey("t", "k", b"a" * 44)
    await store.put_if_absent(key)

    assert await store.rewrap(key, b"b" * 44)
    assert not await store.rewrap(key, b"c" * 44), "changed meanwhile: left alone"
    assert await store.get("t") == WrappedKey("t", "k", b"b" * 44)
