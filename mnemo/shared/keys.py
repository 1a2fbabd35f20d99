"""Data keys at rest: the key-encryption key (KEK) port and the store of wrapped data keys.

A data key belongs to a *scope*: a tenant (bots, lorebook entries and anything without an owner), or one user
of a tenant (``user_scope``), so erasing a user is destroying their scope's keys (crypto-shredding). The KEK
never leaves its :class:`KeyWrapper`: a KMS-style provider wraps and unwraps data keys itself; the local
adapter holds a 32-byte AES-256 key read from the environment (``MNEMO_KEK``) or a file. A destroyed key
leaves a tombstone (its id, scope and time, no key material) so a reader can tell "erased" from "damaged".
"""

from __future__ import annotations

import base64
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

log = logging.getLogger(__name__)

_NONCE = 12
#: Separates a scope's parts; it cannot occur in a tenant or user id sent as JSON text by mistake.
_SEP = "\x1f"


def user_scope(tenant_id: str, user_id: str) -> str:
    """The scope of one user's data key (the tenant's own scope is the bare tenant id)."""
    return f"{tenant_id}{_SEP}user{_SEP}{user_id}"


def scope_of(tenant_id: str, user_id: str | None) -> str:
    return tenant_id if user_id is None else user_scope(tenant_id, user_id)


def tenant_of(scope: str) -> str:
    return scope.split(_SEP, 1)[0]


def user_of(scope: str) -> str | None:
    parts = scope.split(_SEP, 2)
    return parts[2] if len(parts) == 3 else None


@dataclass(frozen=True)
class WrappedKey:
    scope: str  # a tenant id, or ``user_scope(tenant, user)``
    key_id: str
    wrapped: bytes  # what the KeyWrapper returned for the data key (aad: "dek" and the scope)


class KeyStore(Protocol):
    """Persistence of wrapped data keys (MongoDB in production, a dict in unit tests)."""

    async def get(self, scope: str) -> WrappedKey | None:
        """The scope's current key."""
        ...

    async def put_if_absent(self, key: WrappedKey) -> WrappedKey:
        """Store ``key`` unless the scope has one; return the key that is stored (first writer wins)."""
        ...

    async def find(self, key_ids: Sequence[str]) -> list[WrappedKey]:
        """The stored keys among ``key_ids`` (destroyed ones are not)."""
        ...

    async def destroy(self, scope: str, *, whole_tenant: bool = False) -> list[str]:
        """Delete the scope's keys (with ``whole_tenant``: every scope of the tenant ``scope``), leaving
        tombstones; returns the destroyed key ids."""
        ...

    async def destroyed(self, key_ids: Sequence[str]) -> set[str]:
        """Those of ``key_ids`` that were destroyed."""
        ...

    async def all(self) -> list[WrappedKey]:
        """Every key, current and retired."""
        ...

    async def rotate(self, scope: str, new: WrappedKey) -> None:
        """Make ``new`` the scope's current key; the previous one stays, retired, for the tokens it wrote."""
        ...

    async def rewrap(self, key: WrappedKey, wrapped: bytes) -> bool:
        """Replace ``key``'s wrapped form (a KEK rotation) unless it changed meanwhile; True when replaced."""
        ...


class InMemoryKeyStore:
    def __init__(self) -> None:
        self._keys: dict[str, WrappedKey] = {}
        self._retired: dict[str, WrappedKey] = {}  # by key id
        self._tombstones: set[str] = set()

    async def get(self, scope: str) -> WrappedKey | None:
        return self._keys.get(scope)

    async def put_if_absent(self, key: WrappedKey) -> WrappedKey:
        return self._keys.setdefault(key.scope, key)

    async def find(self, key_ids: Sequence[str]) -> list[WrappedKey]:
        wanted = set(key_ids)
        return [k for k in await self.all() if k.key_id in wanted]

    async def destroy(self, scope: str, *, whole_tenant: bool = False) -> list[str]:
        def doomed(s: str) -> bool:
            return s == scope or (whole_tenant and tenant_of(s) == scope)

        ids = [self._keys.pop(s).key_id for s in [s for s in self._keys if doomed(s)]]
        ids += [self._retired.pop(k).key_id for k in [k for k, v in self._retired.items() if doomed(v.scope)]]
        self._tombstones.update(ids)
        return ids

    async def destroyed(self, key_ids: Sequence[str]) -> set[str]:
        return self._tombstones.intersection(key_ids)

    async def all(self) -> list[WrappedKey]:
        return [*self._keys.values(), *self._retired.values()]

    async def rotate(self, scope: str, new: WrappedKey) -> None:
        current = self._keys.get(scope)
        if current is not None and current.key_id == new.key_id:
            return
        if current is not None:
            self._retired[current.key_id] = current
        self._keys[scope] = new

    async def rewrap(self, key: WrappedKey, wrapped: bytes) -> bool:
        new = WrappedKey(key.scope, key.key_id, wrapped)
        if self._keys.get(key.scope) == key:
            self._keys[key.scope] = new
        elif self._retired.get(key.key_id) == key:
            self._retired[key.key_id] = new
        else:
            return False
        return True


class KeyWrapper(Protocol):
    """The KEK behind a port: a KMS adapter implements this with its wrap/unwrap calls."""

    async def wrap(self, data_key: bytes, aad: bytes) -> bytes: ...

    async def unwrap(self, wrapped: bytes, aad: bytes) -> bytes:
        """With the current KEK or a previous one still accepted; ``ValueError`` when none opens it."""
        ...

    async def is_current(self, wrapped: bytes, aad: bytes) -> bool:
        """Whether the current KEK wrapped it (a KEK rotation re-wraps the others)."""
        ...


class LocalKek:
    """A KEK held in process memory (AES-256-GCM key wrap): from ``MNEMO_KEK`` or a file. ``previous``: KEKs
    being retired (``MNEMO_KEK_PREVIOUS``), accepted for unwrapping until ``mnemo keys rotate-kek`` re-wrapped
    every data key under the current one."""

    def __init__(self, kek: bytes, previous: Sequence[bytes] = ()) -> None:
        if any(len(k) != 32 for k in (kek, *previous)):
            raise ValueError("the key-encryption key must be 32 bytes (AES-256)")
        self._aead = AESGCM(kek)
        self._previous = [AESGCM(k) for k in previous]

    async def wrap(self, data_key: bytes, aad: bytes) -> bytes:
        nonce = os.urandom(_NONCE)
        return nonce + self._aead.encrypt(nonce, data_key, aad)

    async def unwrap(self, wrapped: bytes, aad: bytes) -> bytes:
        for aead in (self._aead, *self._previous):
            try:
                return aead.decrypt(wrapped[:_NONCE], wrapped[_NONCE:], aad)
            except InvalidTag:
                continue
        raise ValueError("the data key does not open with this KEK (nor a previous one)")

    async def is_current(self, wrapped: bytes, aad: bytes) -> bool:
        try:
            self._aead.decrypt(wrapped[:_NONCE], wrapped[_NONCE:], aad)
        except InvalidTag:
            return False
        return True


def wrap_aad(scope: str) -> bytes:
    """The associated data binding a wrapped data key to its scope."""
    return f"dek{_SEP}{scope}".encode()


def parse_kek(value: str) -> bytes:
    try:
        key = base64.b64decode(value, validate=True)
    except ValueError as exc:
        raise ValueError("MNEMO_KEK must be base64") from exc
    if len(key) != 32:
        raise ValueError("MNEMO_KEK must decode to 32 bytes")
    return key


def read_kek_file(path: Path) -> bytes:
    """A KEK file holds the base64 key on one line (what ``load_or_create_kek`` writes)."""
    return parse_kek(path.read_text().strip())


def load_or_create_kek(data_dir: Path) -> bytes:
    """Embedded mode: the KEK lives in ``<data_dir>/kek.b64``; losing it makes all stored text unreadable."""
    path = data_dir / "kek.b64"
    if path.exists():
        return read_kek_file(path)
    data_dir.mkdir(parents=True, exist_ok=True)
    key = AESGCM.generate_key(bit_length=256)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(base64.b64encode(key).decode() + "\n")
    log.warning(
        "generated a new key-encryption key at %s: BACK IT UP. Without it the stored conversations cannot be "
        "decrypted. In production set MNEMO_KEK (or MNEMO_KEK_FILE) from a secret manager instead.",
        path,
    )
    return key
