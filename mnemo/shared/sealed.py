"""Files sealed at rest: bytes too large to hold at once, encrypted under a tenant's or user's data key.

Why ours: ``cryptography`` has one-shot AEAD only, and Tink's streaming AEAD would bring a large dependency for
these few lines. The construction is the one Tink and age use (STREAM, Hoang, Reyhanitabar, Rogaway and Vizár,
2015): the file is cut into segments of :data:`SEGMENT` bytes, each sealed with AES-256-GCM under a nonce made
of a random prefix, the segment's number and a last-segment flag, so no segment can be reordered, dropped or
cut off unseen; the associated data binds the whole to its tenant and record (``crypto.TenantCipher``).

Layout: :data:`MAGIC`, the key id's length (2 bytes, big-endian) and the key id, the 7-byte nonce prefix, then
the segments (``SEGMENT`` + 16 bytes each, the last one shorter; an empty file is one empty last segment).
"""

from __future__ import annotations

import io
import secrets
import struct
from collections.abc import Iterator
from typing import BinaryIO

from cryptography.exceptions import InvalidTag

from mnemo.shared.crypto import DecryptionError, TenantCipher

MAGIC = b"mnemo-sealed-1\n"
SEGMENT = 1 << 20
_TAG = 16
_PREFIX = 7
_FIELD = "sealed"


def is_sealed(head: bytes) -> bool:
    """Whether a file's first bytes are a sealed file's."""
    return head.startswith(MAGIC)


def key_id_of(src: BinaryIO) -> str:
    """The id of the key a sealed file was written under (read from its header; ``src`` is left after it)."""
    if not is_sealed(src.read(len(MAGIC))):
        raise DecryptionError("not a sealed file")
    (length,) = struct.unpack(">H", _exactly(src, 2))
    return _exactly(src, length).decode()


def seal(src: BinaryIO, dst: BinaryIO, cipher: TenantCipher, record_id: str) -> None:
    """Write ``src``'s bytes to ``dst`` sealed under the cipher's current key, bound to ``record_id``."""
    key_id, aead = cipher.current_key()
    prefix = secrets.token_bytes(_PREFIX)
    aad = cipher.associated_data(record_id, _FIELD)
    encoded = key_id.encode()
    dst.write(MAGIC + struct.pack(">H", len(encoded)) + encoded + prefix)
    for index, (plain, last) in enumerate(_pieces(src, SEGMENT)):
        dst.write(aead.encrypt(_nonce(prefix, index, last), plain, aad))


def unseal(src: BinaryIO, dst: BinaryIO, cipher: TenantCipher, record_id: str) -> None:
    """Write the plain bytes of the sealed file ``src`` to ``dst``; :class:`DecryptionError` (or ``KeyErased``)
    when it is damaged, cut short, bound to another tenant or record, or its key is gone. The cipher must have
    the file's key loaded (``FieldCipher.for_tenant(..., key_ids=[key_id_of(...)])``)."""
    key_id = key_id_of(src)
    aead = cipher.aead_of(key_id, f"sealed file {record_id!r}")
    prefix = _exactly(src, _PREFIX)
    aad = cipher.associated_data(record_id, _FIELD)
    for index, (sealed, last) in enumerate(_pieces(src, SEGMENT + _TAG)):
        try:
            dst.write(aead.decrypt(_nonce(prefix, index, last), sealed, aad))
        except InvalidTag as exc:
            raise DecryptionError(f"sealed file {record_id!r}: segment {index} damaged, cut short or moved") from exc


def seal_bytes(data: bytes, cipher: TenantCipher, record_id: str) -> bytes:
    out = io.BytesIO()
    seal(io.BytesIO(data), out, cipher, record_id)
    return out.getvalue()


def unseal_bytes(data: bytes, cipher: TenantCipher, record_id: str) -> bytes:
    out = io.BytesIO()
    unseal(io.BytesIO(data), out, cipher, record_id)
    return out.getvalue()


def _nonce(prefix: bytes, index: int, last: bool) -> bytes:
    return prefix + struct.pack(">I?", index, last)


def _pieces(src: BinaryIO, size: int) -> Iterator[tuple[bytes, bool]]:
    """``src`` in pieces of ``size`` bytes, each with whether it is the last (read one ahead to know); at least
    one piece, empty for an empty source."""
    piece = src.read(size)
    while True:
        following = src.read(size)
        yield piece, not following
        if not following:
            return
        piece = following


def _exactly(src: BinaryIO, n: int) -> bytes:
    data = src.read(n)
    if len(data) != n:
        raise DecryptionError("sealed file cut short in its header")
    return data
