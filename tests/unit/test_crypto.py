"""FieldCipher: AES-GCM field encryption bound to tenant, record and field, keys wrapped by the KEK."""

from __future__ import annotations

import base64
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.shared.crypto import DecryptionError, FieldCipher, InMemoryKeyStore, TenantCipher

KEK = bytes(range(32))


async def tenant(name: str = "t1", store: InMemoryKeyStore | None = None, kek: bytes = KEK) -> TenantCipher:
    return await FieldCipher(kek, store or InMemoryKeyStore()).for_tenant(name)


async def test_round_trip_restores_the_value_and_hides_it() -> None:
    c = await tenant()
    token = c.encrypt("rec1", "content", {"text": "hello", "n": [1, 2]})

    assert token.startswith("enc1:")
    assert "hello" not in token
    assert c.decrypt("rec1", "content", token) == {"text": "hello", "n": [1, 2]}


async def test_same_value_encrypts_differently_each_time() -> None:
    c = await tenant()
    assert c.encrypt("r", "f", "same") != c.encrypt("r", "f", "same")


@pytest.mark.parametrize(("record", "field"), [("rec2", "content"), ("rec1", "author_name")])
async def test_token_bound_to_its_record_and_field(record: str, field: str) -> None:
    c = await tenant()
    token = c.encrypt("rec1", "content", "secret")

    with pytest.raises(DecryptionError):
        c.decrypt(record, field, token)


async def test_token_of_another_tenant_does_not_decrypt() -> None:
    cipher = FieldCipher(KEK, InMemoryKeyStore())
    a, b = await cipher.for_tenant("a"), await cipher.for_tenant("b")

    with pytest.raises(DecryptionError):
        b.decrypt("rec", "f", a.encrypt("rec", "f", "secret"))


def test_token_is_bound_to_its_tenant_even_under_the_same_data_key() -> None:
    key = bytes(32)
    token = TenantCipher("a", "k1", key).encrypt("rec", "f", "secret")

    with pytest.raises(DecryptionError, match="another tenant"):
        TenantCipher("b", "k1", key).decrypt("rec", "f", token)


@pytest.mark.parametrize(
    "damage",
    [
        lambda t: t[:-10],  # truncated
        lambda t: t[: len("enc1:") + 20],  # cut to almost nothing
        lambda t: t[:-4] + ("AAAA" if not t.endswith("AAAA") else "BBBB"),  # garbled tag
        lambda t: t.replace("enc1:", "enc9:"),  # unknown format
        lambda t: t + "!!",  # not base64
        lambda t: "plain text",
        lambda t: "enc1:nokeyseparator",
    ],
)
async def test_damaged_tokens_raise_decryption_error(damage: object) -> None:
    c = await tenant()
    token = c.encrypt("r", "f", "a long enough secret value")

    with pytest.raises(DecryptionError):
        c.decrypt("r", "f", damage(token))  # type: ignore[operator]


async def test_ciphertext_with_a_flipped_bit_fails() -> None:
    c = await tenant()
    token = c.encrypt("r", "f", "secret")
    prefix, key_id, blob = token.split(":")
    raw = bytearray(base64.b64decode(blob))
    raw[14] ^= 0x01

    with pytest.raises(DecryptionError):
        c.decrypt("r", "f", f"{prefix}:{key_id}:{base64.b64encode(bytes(raw)).decode()}")


async def test_keys_are_stable_across_cipher_instances_sharing_a_store() -> None:
    store = InMemoryKeyStore()
    token = (await tenant("t", store)).encrypt("r", "f", "kept")

    again = await tenant("t", store)

    assert again.decrypt("r", "f", token) == "kept"


async def test_a_different_kek_cannot_open_the_stored_data_key() -> None:
    store = InMemoryKeyStore()
    await tenant("t", store)

    with pytest.raises(DecryptionError, match="KEK"):
        await tenant("t", store, kek=os.urandom(32))


def test_kek_must_be_32_bytes() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        FieldCipher(b"short", InMemoryKeyStore())


async def test_encrypt_fields_only_touches_listed_non_null_fields() -> None:
    c = await tenant()
    data = {"content": "hi", "author_name": None, "message_id": "m1"}

    enc = c.encrypt_fields("r", data, frozenset({"content", "author_name"}))

    assert enc["content"].startswith("enc1:")
    assert enc["author_name"] is None
    assert enc["message_id"] == "m1"
    assert c.decrypt_fields("r", enc, frozenset({"content", "author_name"})) == data


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(value=_json, record=st.text(min_size=1), field=st.text(min_size=1))
def test_round_trip_over_arbitrary_json_values(value: object, record: str, field: str) -> None:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    c = TenantCipher("t", "k1", AESGCM.generate_key(bit_length=256))
    assert c.decrypt(record, field, c.encrypt(record, field, value)) == value
