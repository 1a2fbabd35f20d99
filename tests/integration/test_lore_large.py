"""Books past NATS' 1 MB default go through the lore service: the two largest real fixtures (a 1.6 MB World
Info file, a 1.4 MB PNG card) import over ``mnemo.rpc.lore.import.v1`` and export to a file that imports to
the same entries. Needs the nats-server's ``max_payload`` raised (``mnemo/runtime/servers.py``)."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from mnemo.services.lore.app import create_router as lore_router
from mnemo.services.lore.formats.importer import import_lorebook
from mnemo.shared import subjects
from tests.integration.ingest_stack import running
from tests.waiting import request_reply

pytestmark = pytest.mark.integration

LARGE = ["st-wi_monster-hunter_with-originalData.json", "card-v2-png_sakana.png"]


async def request(nc: Any, subject: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = await request_reply(nc, subject, json.dumps(body).encode(), timeout=60)
    result: dict[str, Any] = json.loads(reply.data)
    return result


@pytest.mark.parametrize("name", LARGE)
async def test_a_book_over_one_megabyte_imports_and_exports_over_nats(nats_url, mongo_url, db_name, shared_dir, name):
    raw = (Path(shared_dir) / "fixtures/lorebooks" / name).read_bytes()
    assert len(raw) > 1_000_000, "the point of this test: larger than NATS' default max_payload"
    file: dict[str, Any] = (
        {"data_base64": base64.b64encode(raw).decode()} if name.endswith(".png") else {"data": json.loads(raw)}
    )
    tenant = f"tenant-{uuid.uuid4().hex[:8]}"
    async with running(nats_url, mongo_url, db_name, [lore_router]) as stack:
        imported = await request(
            stack.nc,
            subjects.LORE_IMPORT,
            {"tenant_id": tenant, "owner_user_id": "u1", "name": name, **file, "attach_to_bots": []},
        )
        assert "error" not in imported, imported
        exported = await request(
            stack.nc, subjects.LORE_EXPORT, {"tenant_id": tenant, "lorebook_id": imported["lorebook_id"]}
        )
    assert "error" not in exported, exported
    expected = import_lorebook(raw if name.endswith(".png") else json.loads(raw)).book.entries
    assert imported["entries"] == len(expected) > 0
    assert import_lorebook(exported["data"]).book.entries == expected
