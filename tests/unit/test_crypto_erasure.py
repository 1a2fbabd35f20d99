"""Per-user data keys and crypto-shredding: FieldCipher.erase, KeyErased, reads that skip erased events, and
how long another process may keep an erased key (its cache time)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from mnemo.shared.crypto import DecryptionError, FieldCipher, InMemoryKeyStore, KeyErased, token_key_id
from mnemo.shared.eventlog.codec import EventCodec
from mnemo.shared.eventlog.inmemory import InMemoryEventStore
from mnemo.shared.events.envelope import NewEvent
from mnemo.shared.events.recorded import REGISTRY, bot_stream, conversation_stream
from mnemo.shared.keys import user_scope

KEK = bytes(range(32))
T0 = datetime(2026, 5, 1, tzinfo=UTC)


def message(user: str, i: int, text: str) -> NewEvent:
    return NewEvent(
        type="message.recorded",
        tenant_id="t",
        payload={
            "user_id": user, "conversation_id": "c", "message_id": f"m{i}", "role": "user", "author_id": "p",
            "author_name": "Ana", "content": text, "created_at": T0.isoformat(), "bot_ids": ["b"],
            "persona_id": "p", "index": i, "tokens": 3,
        },
    )  # fmt: skip


def bot() -> NewEvent:
    payload = {"bot_id": "b", "owner_user_id": "alice", "name": "Sage", "system_prompt": "Be wise.", "gender": None,
               "age": None, "updated_at": T0.isoformat()}  # fmt: skip
    return NewEvent(type="bot.recorded", tenant_id="t", payload=payload)


async def test_each_user_gets_their_own_key_and_bots_the_tenants() -> None:
    store = InMemoryKeyStore()
    cipher = FieldCipher(KEK, store)
    alice, bob, tenant = (
        await cipher.for_tenant("t", "alice"),
        await cipher.for_tenant("t", "bob"),
        await cipher.for_tenant("t"),
    )
    assert len({alice.key_id, bob.key_id, tenant.key_id}) == 3
    assert {k.scope for k in await store.all()} == {"t", user_scope("t", "alice"), user_scope("t", "bob")}

    codec = EventCodec(REGISTRY, cipher)
    log = InMemoryEventStore(codec)
    await log.append(conversation_stream("t", "alice", "c"), 0, [message("alice", 0, "my secret garden")])
    await log.append(bot_stream("t", "b"), 0, [bot()])
    stored = list(log.docs.values())
    keys = {d["type"]: token_key_id(d["payload"]["name" if d["type"] == "bot.recorded" else "content"]) for d in stored}
    assert keys == {"message.recorded": alice.key_id, "bot.recorded": tenant.key_id}, "the owner's key, the tenant's"


async def test_a_fresh_process_reads_any_scope_by_the_tokens_key_id() -> None:
    store = InMemoryKeyStore()
    writer = await FieldCipher(KEK, store).for_tenant("t", "alice")
    doc = {"_id": "r", "content": writer.encrypt("r", "content", "hello")}

    reader = await FieldCipher(KEK, store).for_tenant("t", reading=[doc])

    assert reader.decrypt("r", "content", doc["content"]) == "hello"


async def test_erasing_a_user_makes_their_tokens_erased_and_spares_the_others() -> None:
    store = InMemoryKeyStore()
    cipher = FieldCipher(KEK, store)
    alice, bob = await cipher.for_tenant("t", "alice"), await cipher.for_tenant("t", "bob")
    a_doc = {"content": alice.encrypt("r1", "content", "alice text")}
    b_doc = {"content": bob.encrypt("r2", "content", "bob text")}

    assert await cipher.erase("t", "alice") == [alice.key_id]

    other_process = await FieldCipher(KEK, store).for_tenant("t", reading=[a_doc, b_doc])
    with pytest.raises(KeyErased):
        other_process.decrypt("r1", "content", a_doc["content"])
    assert other_process.decrypt("r2", "content", b_doc["content"]) == "bob text"
    same_process = await cipher.for_tenant("t", reading=[a_doc])
    with pytest.raises(KeyErased):
        same_process.decrypt("r1", "content", a_doc["content"])
    assert all(k.key_id != alice.key_id for k in await store.all()), "no copy of the key is left in the store"


async def test_a_user_writing_again_after_erasure_gets_a_new_key() -> None:
    cipher = FieldCipher(KEK, InMemoryKeyStore())
    before = await cipher.for_tenant("t", "alice")
    await cipher.erase("t", "alice")
    after = await cipher.for_tenant("t", "alice")
    assert after.key_id != before.key_id
    assert after.decrypt("r", "f", after.encrypt("r", "f", "new life")) == "new life"


async def test_erasing_a_tenant_destroys_every_key_of_it_and_only_of_it() -> None:
    store = InMemoryKeyStore()
    cipher = FieldCipher(KEK, store)
    for user in ("alice", "bob", None):
        await cipher.for_tenant("t", user)
    kept = await cipher.for_tenant("t2", "alice")

    destroyed = await cipher.erase("t")

    assert len(destroyed) == 3
    assert [k.key_id for k in await store.all()] == [kept.key_id]


async def test_unknown_key_is_an_error_not_an_erasure() -> None:
    cipher = FieldCipher(KEK, InMemoryKeyStore())
    stranger = await FieldCipher(KEK, InMemoryKeyStore()).for_tenant("t")
    doc = {"f": stranger.encrypt("r", "f", "x")}
    c = await cipher.for_tenant("t", reading=[doc])
    with pytest.raises(DecryptionError) as caught:
        c.decrypt("r", "f", doc["f"])
    assert not isinstance(caught.value, KeyErased)


async def test_another_process_stops_using_an_erased_key_after_its_cache_time() -> None:
    store = InMemoryKeyStore()
    eraser, other = FieldCipher(KEK, store), FieldCipher(KEK, store, cache_seconds=0.2)
    cached = await other.for_tenant("t", "alice")
    await eraser.erase("t", "alice")

    assert (await other.for_tenant("t", "alice")).key_id == cached.key_id, "within its cache time: the old key"
    await asyncio.sleep(0.3)
    doc = {"f": cached.encrypt("r", "f", "x")}
    renewed = await other.for_tenant("t", "alice", reading=[doc])
    assert renewed.key_id != cached.key_id, "then a new key for new writes"
    with pytest.raises(KeyErased):
        renewed.decrypt("r", "f", doc["f"])


async def test_log_reads_skip_the_events_of_an_erased_user() -> None:
    cipher = FieldCipher(KEK, InMemoryKeyStore())
    log = InMemoryEventStore(EventCodec(REGISTRY, cipher))
    await log.append(conversation_stream("t", "alice", "c"), 0, [message("alice", 0, "gone soon")])
    await log.append(conversation_stream("t", "bob", "c"), 0, [message("bob", 0, "stays")])

    await cipher.erase("t", "alice")

    assert [e.payload["content"] async for e in log.read_all()] == ["stays"]
    assert await log.read_stream(conversation_stream("t", "alice", "c")) == []
