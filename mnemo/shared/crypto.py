"""Field encryption: AES-256-GCM under a data key per tenant or per user, wrapped by a key-encryption key (KEK).

Every user text stored in MongoDB or relayed to JetStream goes through :class:`FieldCipher`. The associated data
binds a ciphertext to its tenant, record and field, so a value copied to another record, field or tenant fails
to decrypt instead of being shown in the wrong place. Tokens are self-describing
(``enc1:<key id>:<base64 nonce|ciphertext|tag>``): a reader finds the key by its id, whatever scope wrote it.

Text a user owns (their messages, summaries, facts, personas, books) is encrypted under that user's own key
(``for_tenant(tenant, user)``), so destroying the key (:meth:`FieldCipher.erase`) makes every copy unreadable:
the log, JetStream messages, read models and backups alike. Reading a token whose key was destroyed raises
:class:`KeyErased`. Keys are cached in memory for ``cache_seconds`` at most, which bounds how long another
process can still use a key erased elsewhere.
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import time
from collections.abc import Iterable, Mapping
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from pydantic_core import to_json

from mnemo.shared.keys import (
    InMemoryKeyStore,
    KeyStore,
    KeyWrapper,
    LocalKek,
    WrappedKey,
    load_or_create_kek,
    parse_kek,
    scope_of,
    tenant_of,
    user_of,
    wrap_aad,
)

__all__ = [
    "DecryptionError",
    "FieldCipher",
    "InMemoryKeyStore",
    "KeyErased",
    "KeyStore",
    "TenantCipher",
    "WrappedKey",
    "load_or_create_kek",
    "parse_kek",
    "token_key_id",
]

TOKEN_PREFIX = "enc1:"
_NONCE = 12


class DecryptionError(ValueError):
    """A ciphertext was damaged, or is being read under the wrong tenant, record or field."""


class KeyErased(DecryptionError):
    """The ciphertext's key was destroyed (its owner was erased): the value is gone, by design."""


def token_key_id(value: object) -> str | None:
    """The key id of an encrypted token, None for anything else."""
    if isinstance(value, str) and value.startswith(TOKEN_PREFIX):
        key_id, sep, _ = value[len(TOKEN_PREFIX) :].partition(":")
        return key_id if sep else None
    return None


def _aad(*parts: str) -> bytes:
    return "\x1f".join(parts).encode()


class TenantCipher:
    """Encrypts under one scope's current key; decrypts with any key its :class:`FieldCipher` has loaded."""

    def __init__(
        self,
        tenant_id: str,
        key_id: str,
        data_key: bytes,
        ring: Mapping[str, AESGCM] | None = None,
        erased: set[str] | None = None,
    ) -> None:
        self.tenant_id = tenant_id
        self.key_id = key_id
        self._aead = AESGCM(data_key)
        self._ring: Mapping[str, AESGCM] = ring if ring is not None else {}
        self._erased: set[str] = erased if erased is not None else set()

    def encrypt(self, record_id: str, field: str, value: Any) -> str:
        nonce = secrets.token_bytes(_NONCE)
        plain = to_json(value)  # compact UTF-8 JSON, as json.dumps(ensure_ascii=False) but ~5x faster
        ct = self._aead.encrypt(nonce, plain, _aad(self.tenant_id, record_id, field))
        return f"{TOKEN_PREFIX}{self.key_id}:{base64.b64encode(nonce + ct).decode()}"

    def decrypt(self, record_id: str, field: str, token: str) -> Any:
        if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX):
            raise DecryptionError(f"field {field!r} of {record_id!r} is not an encrypted token")
        try:
            key_id, blob_b64 = token[len(TOKEN_PREFIX) :].split(":", 1)
            blob = base64.b64decode(blob_b64, validate=True)
        except ValueError as exc:
            raise DecryptionError(f"field {field!r} of {record_id!r}: malformed token") from exc
        aead = self.aead_of(key_id, f"field {field!r} of {record_id!r}")
        if len(blob) < _NONCE + 16:
            raise DecryptionError(f"field {field!r} of {record_id!r}: ciphertext truncated")
        try:
            plain = aead.decrypt(blob[:_NONCE], blob[_NONCE:], _aad(self.tenant_id, record_id, field))
        except InvalidTag as exc:
            raise DecryptionError(
                f"field {field!r} of {record_id!r}: damaged, or bound to another tenant/record/field"
            ) from exc
        return json.loads(plain)

    def current_key(self) -> tuple[str, AESGCM]:
        """The scope's current key id and AEAD, for the formats of our own beside the field tokens (sealed files)."""
        return self.key_id, self._aead

    def aead_of(self, key_id: str, what: str) -> AESGCM:
        """The AEAD of a loaded key; :class:`KeyErased` when it was destroyed (``what`` names the value read)."""
        aead = self._aead if key_id == self.key_id else self._ring.get(key_id)
        if aead is None:
            if key_id in self._erased:
                raise KeyErased(f"{what}: key {key_id!r} was erased")
            raise DecryptionError(f"{what}: unknown key {key_id!r}")
        return aead

    def associated_data(self, record_id: str, field: str) -> bytes:
        """What binds a ciphertext to this tenant, its record and its field."""
        return _aad(self.tenant_id, record_id, field)

    def encrypt_fields(self, record_id: str, data: dict[str, Any], fields: frozenset[str]) -> dict[str, Any]:
        return {k: (self.encrypt(record_id, k, v) if k in fields and v is not None else v) for k, v in data.items()}

    def decrypt_fields(self, record_id: str, data: dict[str, Any], fields: frozenset[str]) -> dict[str, Any]:
        return {
            k: (self.decrypt(record_id, k, v) if k in fields and isinstance(v, str) else v) for k, v in data.items()
        }


class FieldCipher:
    """Hands out ciphers per tenant or user, creating and wrapping a scope's data key on first use.

    ``reading``: the documents (top-level values) about to be decrypted; the keys their tokens name are
    loaded first, so a process reads what any other process wrote under any scope."""

    def __init__(self, kek: bytes | KeyWrapper, store: KeyStore, *, cache_seconds: float = 30.0) -> None:
        self._kek: KeyWrapper = LocalKek(kek) if isinstance(kek, bytes) else kek
        self._store = store
        self._ttl = cache_seconds
        self._scopes: dict[str, tuple[float, TenantCipher]] = {}
        self._ring: dict[str, AESGCM] = {}
        self._loaded_at: dict[str, float] = {}
        self._erased: set[str] = set()
        self._lock = asyncio.Lock()

    @property
    def store(self) -> KeyStore:
        return self._store

    @property
    def kek(self) -> KeyWrapper:
        return self._kek

    async def rotate(self, scope: str) -> tuple[str | None, str]:
        """A new data key for ``scope`` (new writes use it); the old one stays, retired, for what it wrote.
        Returns (old key id, new key id). Other processes switch within their cache time."""
        old = await self._store.get(scope)
        data_key = AESGCM.generate_key(bit_length=256)
        new = WrappedKey(scope, secrets.token_hex(8), await self._kek.wrap(data_key, wrap_aad(scope)))
        await self._store.rotate(scope, new)
        async with self._lock:
            self._scopes.pop(scope, None)
            self._ring[new.key_id] = AESGCM(data_key)
            self._loaded_at[new.key_id] = time.monotonic()
        return (old.key_id if old else None, new.key_id)

    async def cipher_for_scope(self, scope: str, *, reading: Iterable[Mapping[str, Any]] = ()) -> TenantCipher:
        """The cipher of a scope as stored (``rotate`` and the re-encryption job work on scopes)."""
        return await self.for_tenant(tenant_of(scope), user_of(scope), reading=reading)

    async def for_tenant(
        self,
        tenant_id: str,
        user_id: str | None = None,
        *,
        reading: Iterable[Mapping[str, Any]] = (),
        key_ids: Iterable[str] = (),
    ) -> TenantCipher:
        """The scope's cipher, with the keys of what will be decrypted loaded too: those of the tokens in
        ``reading``'s documents and ``key_ids`` (a sealed file names its key)."""
        scope = scope_of(tenant_id, user_id)
        now = time.monotonic()
        cached = self._scopes.get(scope)
        if cached is None or now - cached[0] > self._ttl:
            async with self._lock:
                cached = self._scopes.get(scope)
                if cached is None or now - cached[0] > self._ttl:
                    cached = (now, await self._load_or_create(tenant_id, scope))
                    self._scopes[scope] = cached
        if reading == () and key_ids == ():
            # The write path (twice per ingested message: its event, its read-model row) reads nothing: no sets
            # to build (py-spy put them at 0.7-2.2 % of ingest's CPU in make bench-ingest, 2026-11-27).
            return cached[1]
        wanted = {k for doc in reading for v in doc.values() if (k := token_key_id(v)) is not None} | set(key_ids)
        stale = {k for k in wanted if now - self._loaded_at.get(k, -1e18) > self._ttl and k not in self._erased}
        if stale:
            await self._load(stale)
        return cached[1]

    async def _load(self, key_ids: set[str]) -> None:
        found = {k.key_id: k for k in await self._store.find(sorted(key_ids))}
        now = time.monotonic()
        for key_id in key_ids:
            wrapped = found.get(key_id)
            if wrapped is None:
                self._ring.pop(key_id, None)
                self._loaded_at.pop(key_id, None)
                continue
            self._ring[key_id] = AESGCM(await self._unwrap(wrapped))
            self._loaded_at[key_id] = now
        missing = key_ids - found.keys()
        if missing:
            self._erased.update(await self._store.destroyed(sorted(missing)))

    async def _unwrap(self, wrapped: WrappedKey) -> bytes:
        try:
            return await self._kek.unwrap(wrapped.wrapped, wrap_aad(wrapped.scope))
        except ValueError as exc:
            raise DecryptionError(f"data key of {wrapped.scope!r} does not open with this KEK") from exc

    async def _load_or_create(self, tenant_id: str, scope: str) -> TenantCipher:
        wrapped = await self._store.get(scope)
        if wrapped is None:
            data_key = AESGCM.generate_key(bit_length=256)
            candidate = WrappedKey(scope, secrets.token_hex(8), await self._kek.wrap(data_key, wrap_aad(scope)))
            # Another replica may have raced us: whichever key was stored first is the scope's key.
            wrapped = await self._store.put_if_absent(candidate)
        data_key = await self._unwrap(wrapped)
        self._ring[wrapped.key_id] = AESGCM(data_key)
        self._loaded_at[wrapped.key_id] = time.monotonic()
        return TenantCipher(tenant_id, wrapped.key_id, data_key, self._ring, self._erased)

    async def erase(self, tenant_id: str, user_id: str | None = None) -> list[str]:
        """Destroy the user's keys (``user_id`` None: every key of the tenant, its users' too); returns their ids.

        Everything they encrypted becomes unreadable here at once, in other processes within their cache time."""
        scope = scope_of(tenant_id, user_id)
        ids = await self._store.destroy(scope, whole_tenant=user_id is None)
        async with self._lock:
            for s in list(self._scopes):
                if s == scope or (user_id is None and tenant_of(s) == tenant_id):
                    del self._scopes[s]
            for key_id in ids:
                self._ring.pop(key_id, None)
                self._loaded_at.pop(key_id, None)
            self._erased.update(ids)
        return ids
