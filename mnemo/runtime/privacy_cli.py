"""`mnemo export-user`: write everything mnemo holds about a user to a JSON file, printing progress.

It reads MongoDB directly (the read models and the key store) with the KEK from settings, so it works with
the stack running or stopped; ``embedded`` starts the embedded servers first (the stack must then be stopped).
The same export answers ``mnemo.rpc.privacy.export_user.v1`` (mnemo/services/privacy/export.py).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from pymongo import AsyncMongoClient

from mnemo.runtime.stack import start_servers
from mnemo.services.privacy.export import Exporter
from mnemo.shared.bootstrap import resolve_kek
from mnemo.shared.crypto import FieldCipher
from mnemo.shared.eventlog.keystore import MongoKeyStore
from mnemo.shared.readmodels.rows import MongoTenantRows
from mnemo.shared.settings import Settings
from mnemo_client.wire.privacy_contract import ExportUserRequest


def _progress(section: str, count: int) -> None:
    print(f"exported {section}: {count}", flush=True)


async def export_user(settings: Settings, tenant_id: str, user_id: str, out: Path, *, embedded: bool) -> int:
    """Writes the export to ``out``; returns the number of items written."""
    servers = await asyncio.to_thread(start_servers, settings) if embedded else []
    try:
        mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(settings.mongodb_url, tz_aware=True)
        try:
            db = mongo[settings.mongodb_db]
            cipher = FieldCipher(resolve_kek(settings), MongoKeyStore(db))
            request = ExportUserRequest(tenant_id=tenant_id, user_id=user_id)
            export = await Exporter(MongoTenantRows(db), cipher).export_user(request, _progress)
        finally:
            await mongo.close()
    finally:
        for server in reversed(servers):
            await asyncio.to_thread(server.stop)
    doc = export.model_dump(mode="json")
    await asyncio.to_thread(out.write_text, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    items = sum(len(c["messages"]) + len(c["summaries"]) for c in export.conversations)
    items += sum(len(f) for f in export.facts.values()) + len(export.legacy_memories)
    items += len(export.lorebooks) + len(export.personas)
    print(f"wrote {out}: {items} items of user {user_id!r}", flush=True)
    return items
