"""A document's stored bytes, sealed at rest under its owner's data key (``mnemo/shared/sealed.py``).

An inline upload is sealed before it is stored. A platform's own upload (``object``, which it put in
``MNEMO_UPLOADS`` itself) arrives plain: the import's first step replaces it, under the same name, by its sealed
form, with the plain file's digest and size kept in the object's headers so that importing the same object again
is still known as the same document. From then on the plain bytes live only in the parsing's temporary
directory, and erasing the owner (their data key destroyed) leaves the stored file unreadable even where
deleting it failed. An object stored before sealing existed, or whose sealing was cut short by a crash, is read
as it is and sealed then.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from nats.js.api import ObjectMeta
from nats.js.object_store import ObjectStore

from mnemo.shared import sealed
from mnemo.shared.crypto import FieldCipher, TenantCipher

PLAIN_DIGEST = "Mnemo-Plain-Digest"
PLAIN_SIZE = "Mnemo-Plain-Size"


def record_id(obj: str) -> str:
    """What a sealed upload is bound to: its object's name (which starts with its tenant)."""
    return f"upload:{obj}"


class StoredUploads:
    def __init__(self, uploads: Callable[[], Awaitable[ObjectStore]], ciphers: FieldCipher) -> None:
        self._uploads = uploads
        self._ciphers = ciphers

    async def put_inline(self, obj: str, raw: bytes, tenant_id: str, owner: str) -> None:
        cipher = await self._ciphers.for_tenant(tenant_id, owner)
        await (await self._uploads()).put(obj, sealed.seal_bytes(raw, cipher, record_id(obj)))

    async def plain_digest(self, obj: str) -> tuple[str, int]:
        """The digest and size of the object's plain bytes (``NotFoundError`` when there is no such object)."""
        info = await (await self._uploads()).get_info(obj)
        headers = info.headers or {}
        digest, size = headers.get(PLAIN_DIGEST), headers.get(PLAIN_SIZE)
        if digest and size:
            return _first(digest), int(_first(size))
        return str(info.digest or obj), int(info.size or 0)

    async def fetch(self, obj: str, tenant_id: str, owner: str, path: Path) -> None:
        """The plain bytes of ``obj`` written to ``path`` (streamed: never whole in memory), sealing the stored
        object first where it is still plain. ``DecryptionError``/``KeyErased`` when it cannot be opened."""
        obs = await self._uploads()
        stored, sealed_path = path.with_name(path.name + ".stored"), path.with_name(path.name + ".sealed")
        with stored.open("wb") as f:
            await obs.get(obj, writeinto=f)
        key_id = await asyncio.to_thread(_sealed_key_id, stored)
        if key_id is not None:
            cipher = await self._ciphers.for_tenant(tenant_id, owner, key_ids=[key_id])
            await asyncio.to_thread(_unseal_file, stored, path, cipher, obj)
            return
        digest, size = await self.plain_digest(obj)  # still plain: the object's own digest and size
        cipher = await self._ciphers.for_tenant(tenant_id, owner)
        await asyncio.to_thread(_seal_file, stored, sealed_path, cipher, obj)
        with sealed_path.open("rb") as f:  # replaces the plain bytes under the same name
            await obs.put(obj, f, meta=ObjectMeta(name=obj, headers={PLAIN_DIGEST: digest, PLAIN_SIZE: str(size)}))
        await asyncio.to_thread(os.replace, stored, path)


def _first(value: object) -> str:
    """A header's value (NATS headers may arrive as a list of values)."""
    return str(value[0] if isinstance(value, list) and value else value)


def _sealed_key_id(path: Path) -> str | None:
    """The key id of a sealed file, None for a plain one."""
    with path.open("rb") as f:
        if not sealed.is_sealed(f.read(len(sealed.MAGIC))):
            return None
        f.seek(0)
        return sealed.key_id_of(f)


def _seal_file(src: Path, dst: Path, cipher: TenantCipher, obj: str) -> None:
    with src.open("rb") as i, dst.open("wb") as o:
        sealed.seal(i, o, cipher, record_id(obj))


def _unseal_file(src: Path, dst: Path, cipher: TenantCipher, obj: str) -> None:
    with src.open("rb") as i, dst.open("wb") as o:
        sealed.unseal(i, o, cipher, record_id(obj))
