"""`mnemo keys rotate-kek` and `mnemo keys rotate --tenant T`: the key rotation jobs (mnemo/shared/key_rotation.py)
on the MongoDB from settings, printing progress; both resume where a killed run stopped.

KEK rotation, step by step: (1) restart the services with ``MNEMO_KEK`` = the new KEK and ``MNEMO_KEK_PREVIOUS``
= the old one (new data keys are wrapped by the new KEK, old ones still open); (2) ``mnemo keys rotate-kek``;
(3) remove ``MNEMO_KEK_PREVIOUS`` everywhere and destroy the old KEK. ``embedded`` starts the embedded
servers first (the stack must then be stopped).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

from mnemo.runtime.stack import start_servers
from mnemo.shared.bootstrap import resolve_kek
from mnemo.shared.crypto import FieldCipher
from mnemo.shared.eventlog.keystore import MongoKeyStore
from mnemo.shared.key_rotation import BATCH, RotationReport, rotate_kek, rotate_tenant
from mnemo.shared.settings import Settings


def _print(line: str) -> None:
    print(line, flush=True)


@contextlib.asynccontextmanager
async def opened(
    settings: Settings, *, embedded: bool
) -> AsyncIterator[tuple[AsyncDatabase[dict[str, Any]], FieldCipher]]:
    servers = await asyncio.to_thread(start_servers, settings) if embedded else []
    try:
        mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(settings.mongodb_url, tz_aware=True)
        try:
            db = mongo[settings.mongodb_db]
            keys = MongoKeyStore(db)
            await keys.ensure_indexes()
            yield db, FieldCipher(resolve_kek(settings), keys, cache_seconds=settings.key_cache_seconds)
        finally:
            await mongo.close()
    finally:
        for server in reversed(servers):
            await asyncio.to_thread(server.stop)


async def kek(settings: Settings, *, embedded: bool, stop_after: int | None = None) -> tuple[int, int]:
    async with opened(settings, embedded=embedded) as (_, cipher):
        return await rotate_kek(cipher, _print, stop_after=stop_after)


async def tenant(
    settings: Settings, tenant_id: str, *, embedded: bool, stop_after: int | None = None, batch: int = BATCH
) -> RotationReport:
    async with opened(settings, embedded=embedded) as (db, cipher):
        return await rotate_tenant(db, cipher, tenant_id, _print, stop_after=stop_after, batch=batch)
