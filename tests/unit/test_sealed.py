"""Sealed files (mnemo/shared/sealed.py): the bytes come back whole, and nothing else opens them: another record,
tenant or user, a damaged, cut or reordered segment, an erased key."""

from __future__ import annotations

import io
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.shared import sealed
from mnemo.shared.crypto import DecryptionError, FieldCipher, InMemoryKeyStore, KeyErased
from mnemo.shared.keys import user_scope

KEK = os.urandom(32)
SEGMENT = 64  # small segments: every case spans several


@pytest.fixture(autouse=True)
def small_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sealed, "SEGMENT", SEGMENT)


def segments_of(blob: bytes) -> tuple[bytes, list[bytes]]:
    """A sealed file's header and its segments."""
    src = io.BytesIO(blob)
    sealed.key_id_of(src)
    header_end = src.tell() + 7
    body = blob[header_end:]
    size = SEGMENT + 16
    return blob[:header_end], [body[i : i + size] for i in range(0, len(body), size)] or [b""]


@pytest.mark.parametrize("size", [0, 1, SEGMENT - 1, SEGMENT, SEGMENT + 1, 3 * SEGMENT, 3 * SEGMENT + 5])
async def test_the_bytes_come_back_whole_and_are_not_in_the_sealed_file(size: int) -> None:
    cipher = await FieldCipher(KEK, InMemoryKeyStore()).for_tenant("t1", "alice")
    data = bytes(range(256)) * (size // 256 + 1)
    data = data[:size]
    blob = sealed.seal_bytes(data, cipher, "upload:t1/a.pdf")
    assert sealed.is_sealed(blob)
    assert sealed.unseal_bytes(blob, cipher, "upload:t1/a.pdf") == data
    if size >= 16:
        assert data[:16] not in blob


@settings(max_examples=50, deadline=None)
@given(data=st.binary(max_size=5 * SEGMENT))
def test_round_trip_over_arbitrary_bytes(data: bytes) -> None:
    import asyncio

    cipher = asyncio.run(FieldCipher(KEK, InMemoryKeyStore()).for_tenant("t1"))
    sealed.SEGMENT = SEGMENT  # hypothesis runs outside the fixture's scope for each example
    assert sealed.unseal_bytes(sealed.seal_bytes(data, cipher, "r"), cipher, "r") == data


async def test_nothing_but_its_own_record_and_tenant_opens_it() -> None:
    ciphers = FieldCipher(KEK, InMemoryKeyStore())
    alice = await ciphers.for_tenant("t1", "alice")
    blob = sealed.seal_bytes(b"the wreck lies north" * 20, alice, "upload:t1/a.pdf")
    with pytest.raises(DecryptionError):
        sealed.unseal_bytes(blob, alice, "upload:t1/b.pdf")
    with pytest.raises(DecryptionError):  # another tenant, although this process has alice's key loaded
        sealed.unseal_bytes(blob, await ciphers.for_tenant("t2", "alice"), "upload:t1/a.pdf")
    with pytest.raises(DecryptionError):  # a process that never loaded alice's key
        sealed.unseal_bytes(blob, await FieldCipher(KEK, ciphers.store).for_tenant("t1", "bob"), "upload:t1/a.pdf")


async def test_a_damaged_cut_or_reordered_file_is_refused() -> None:
    cipher = await FieldCipher(KEK, InMemoryKeyStore()).for_tenant("t1", "alice")
    blob = sealed.seal_bytes(os.urandom(3 * SEGMENT + 10), cipher, "r")
    header, parts = segments_of(blob)
    assert len(parts) == 4
    flipped = bytearray(blob)
    flipped[len(header) + 5] ^= 1
    cut_at_a_segment = header + b"".join(parts[:3])  # the third segment was not sealed as the last one
    reordered = header + parts[1] + parts[0] + parts[2] + parts[3]
    without_one = header + parts[0] + parts[2] + parts[3]
    for bad in (bytes(flipped), cut_at_a_segment, reordered, without_one, blob[:-1], header[:10], b"plain text"):
        with pytest.raises(DecryptionError):
            sealed.unseal_bytes(bad, cipher, "r")


async def test_an_erased_key_leaves_it_unreadable_and_a_rotated_one_still_opens_it() -> None:
    ciphers = FieldCipher(KEK, InMemoryKeyStore())
    alice = await ciphers.for_tenant("t1", "alice")
    blob = sealed.seal_bytes(b"kept", alice, "r")
    await ciphers.rotate(user_scope("t1", "alice"))
    rotated = await ciphers.for_tenant("t1", "alice", key_ids=[sealed.key_id_of(io.BytesIO(blob))])
    assert rotated.key_id != alice.key_id
    assert sealed.unseal_bytes(blob, rotated, "r") == b"kept"
    await ciphers.erase("t1", "alice")
    after = await FieldCipher(KEK, ciphers.store).for_tenant("t1", "alice", key_ids=[alice.key_id])
    with pytest.raises(KeyErased):
        sealed.unseal_bytes(blob, after, "r")
