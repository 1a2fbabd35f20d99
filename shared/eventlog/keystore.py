"""Wrapped tenant data keys in MongoDB (:class:`shared.crypto.KeyStore`).

One document per tenant with ``_id = tenant_id``: the ``_id`` uniqueness makes "first writer wins" hold
across replicas without transactions. A replica that loses the race reads the winner back and uses it,
so every replica encrypts a tenant's text with the same key. Writes are journaled: losing a key that was
already used to encrypt events would make those events unreadable.
"""

from __future__ import annotations

from typing import Any

from pymongo import WriteConcern
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from shared.crypto import WrappedKey


class MongoKeyStore:
    def __init__(self, db: AsyncDatabase[Any], collection: str = "tenant_keys") -> None:
        self.keys: AsyncCollection[Any] = db.get_collection(collection, write_concern=WriteConcern(w=1, j=True))

    @staticmethod
    def _key(doc: dict[str, Any]) -> WrappedKey:
        return WrappedKey(tenant_id=doc["_id"], key_id=doc["key_id"], wrapped=bytes(doc["wrapped"]))

    async def get(self, tenant_id: str) -> WrappedKey | None:
        doc = await self.keys.find_one({"_id": tenant_id})
        return self._key(doc) if doc else None

    async def put_if_absent(self, key: WrappedKey) -> WrappedKey:
        try:
            await self.keys.insert_one({"_id": key.tenant_id, "key_id": key.key_id, "wrapped": key.wrapped})
        except DuplicateKeyError:
            winner = await self.get(key.tenant_id)
            if winner is None:  # impossible unless someone deletes keys; never hand out an unsaved key
                raise
            return winner
        return key
