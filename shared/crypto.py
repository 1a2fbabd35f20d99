"""Field encryption: AES-256-GCM under a per-tenant data key, wrapped by a key-encryption key (KEK).

Every user text stored in MongoDB goes through :class:`FieldCipher`. The associated data binds a
ciphertext to its tenant, record and field, so a value copied to another record, field or tenant fails to
decrypt instead of being shown in the wrong place. Tokens are self-describing
(``enc1:<key id>:<base64 nonce|ciphertext|tag>``) so keys can be rotated later by key id.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from pydantic_core import to_json

log = logging.getLogger(__name__)

TOKEN_PREFIX = "enc1:"
_NONCE = 12


class DecryptionError(ValueError):
    """A ciphertext was damaged, or is being read under the wrong tenant, record or field."""


@dataclass(frozen=True)
class WrappedKey:
    tenant_id: str
    key_id: str
    wrapped: bytes  # nonce | AES-GCM(KEK, data key, aad=tenant)


class KeyStore(Protocol):
    """Persistence of wrapped tenant data keys (MongoDB in production, a dict in unit tests)."""

    async def get(self, tenant_id: str) -> WrappedKey | None: ...

    async def put_if_absent(self, key: WrappedKey) -> WrappedKey:
        """Store ``key`` unless the tenant has one; return the key that is stored (first writer wins)."""
        ...


class InMemoryKeyStore:
    def __init__(self) -> None:
        self._keys: dict[str, WrappedKey] = {}

    async def get(self, tenant_id: str) -> WrappedKey | None:
        return self._keys.get(tenant_id)

    async def put_if_absent(self, key: WrappedKey) -> WrappedKey:
        return self._keys.setdefault(key.tenant_id, key)


def _aad(*parts: str) -> bytes:
    return "\x1f".join(parts).encode()


class TenantCipher:
    def __init__(self, tenant_id: str, key_id: str, data_key: bytes) -> None:
        self.tenant_id = tenant_id
        self.key_id = key_id
        self._aead = AESGCM(data_key)

    def encrypt(self, record_id: str, field: str, value: Any) -> str:
        nonce = os.urandom(_NONCE)
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
        if key_id != self.key_id:
            raise DecryptionError(f"field {field!r} of {record_id!r}: unknown key {key_id!r}")
        if len(blob) < _NONCE + 16:
            raise DecryptionError(f"field {field!r} of {record_id!r}: ciphertext truncated")
        try:
            plain = self._aead.decrypt(blob[:_NONCE], blob[_NONCE:], _aad(self.tenant_id, record_id, field))
        except InvalidTag as exc:
            raise DecryptionError(
                f"field {field!r} of {record_id!r}: damaged, or bound to another tenant/record/field"
            ) from exc
        return json.loads(plain)

    def encrypt_fields(self, record_id: str, data: dict[str, Any], fields: frozenset[str]) -> dict[str, Any]:
        return {k: (self.encrypt(record_id, k, v) if k in fields and v is not None else v) for k, v in data.items()}

    def decrypt_fields(self, record_id: str, data: dict[str, Any], fields: frozenset[str]) -> dict[str, Any]:
        return {
            k: (self.decrypt(record_id, k, v) if k in fields and isinstance(v, str) else v) for k, v in data.items()
        }


class FieldCipher:
    """Hands out per-tenant ciphers, creating and wrapping a tenant's data key on first use."""

    def __init__(self, kek: bytes, store: KeyStore) -> None:
        if len(kek) != 32:
            raise ValueError("the key-encryption key must be 32 bytes (AES-256)")
        self._kek = AESGCM(kek)
        self._store = store
        self._cache: dict[str, TenantCipher] = {}
        self._lock = asyncio.Lock()

    async def for_tenant(self, tenant_id: str) -> TenantCipher:
        cached = self._cache.get(tenant_id)
        if cached is not None:
            return cached
        async with self._lock:
            if tenant_id not in self._cache:
                self._cache[tenant_id] = await self._load_or_create(tenant_id)
        return self._cache[tenant_id]

    async def _load_or_create(self, tenant_id: str) -> TenantCipher:
        wrapped = await self._store.get(tenant_id)
        if wrapped is None:
            data_key = AESGCM.generate_key(bit_length=256)
            nonce = os.urandom(_NONCE)
            candidate = WrappedKey(
                tenant_id,
                secrets.token_hex(8),
                nonce + self._kek.encrypt(nonce, data_key, _aad("dek", tenant_id)),
            )
            # Another replica may have raced us: whichever key was stored first is the tenant's key.
            wrapped = await self._store.put_if_absent(candidate)
        try:
            data_key = self._kek.decrypt(wrapped.wrapped[:_NONCE], wrapped.wrapped[_NONCE:], _aad("dek", tenant_id))
        except InvalidTag as exc:
            raise DecryptionError(f"data key of tenant {tenant_id!r} does not open with this KEK") from exc
        return TenantCipher(tenant_id, wrapped.key_id, data_key)


def parse_kek(value: str) -> bytes:
    try:
        key = base64.b64decode(value, validate=True)
    except ValueError as exc:
        raise ValueError("MNEMO_KEK must be base64") from exc
    if len(key) != 32:
        raise ValueError("MNEMO_KEK must decode to 32 bytes")
    return key


def load_or_create_kek(data_dir: Path) -> bytes:
    """Embedded mode: the KEK lives in ``<data_dir>/kek.b64``; losing it makes all stored text unreadable."""
    path = data_dir / "kek.b64"
    if path.exists():
        return parse_kek(path.read_text().strip())
    data_dir.mkdir(parents=True, exist_ok=True)
    key = AESGCM.generate_key(bit_length=256)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(base64.b64encode(key).decode() + "\n")
    log.warning(
        "generated a new key-encryption key at %s: BACK IT UP. Without it the stored conversations cannot be "
        "decrypted. In production set MNEMO_KEK from a secret manager instead.",
        path,
    )
    return key
