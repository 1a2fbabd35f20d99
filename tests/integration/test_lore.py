"""Lore end to end over real NATS and SecantusDB: import, export and attach a real book, then find its
keyword-activated entries in the assembled context, and only where the book is attached.

The lore service and the context-assembler run as routers on one broker; requests go through a plain
nats-py client, as a platform would send them. Conversations are seeded through the read models.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient

from mnemo.services.context_assembler.app import create_router as assembler_router
from mnemo.services.context_assembler.settings import AssemblerSettings
from mnemo.services.lore.app import create_router as lore_router
from mnemo.services.lore.formats.importer import import_lorebook
from mnemo.shared import subjects
from mnemo.shared.deps import Deps
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import bot_stream
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.readmodels.catalog import LORE, drop, ensure_indexes
from mnemo.shared.readmodels.lore import LoreReadModel
from tests.envelopes import message_recorded, recorded
from tests.integration.ingest_stack import Stack, running
from tests.waiting import request_reply

pytestmark = pytest.mark.integration

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
USER, CONV, BOT, OTHER_BOT = "u1", "c1", "bot-ada", "bot-bram"
LINES = [
    ("user", "Mira", "We landed on the planet at dawn."),
    ("assistant", "Ada", "Welcome. The shuttle bay is behind us."),
    ("user", "Mira", "Which way to the Research Labs? These samples go to the Marine Lab."),
]
LAB_TEXT = "Lythora Station features several specialized labs"
HUB_TEXT = "The Central Hub is the core of Lythora Station"


def _env(tenant: str, stream: str, version: int, type_: str, payload: dict[str, Any]) -> EventEnvelope:
    return recorded(tenant, stream, version, type_, payload, T0)


async def seed(stack: Stack, tenant: str, conversation: str = CONV) -> None:
    """Two bots and a conversation whose last message mentions entry 4's keys (primary and secondary)."""
    events = [
        _env(
            tenant,
            bot_stream(tenant, b),
            1,
            "bot.recorded",
            {
                "bot_id": b,
                "owner_user_id": None,
                "name": name,
                "system_prompt": "Guide visitors.",
                "updated_at": T0,
            },
        )
        for b, name in ((BOT, "Ada"), (OTHER_BOT, "Bram"))
    ]
    events += [
        message_recorded(
            tenant,
            USER,
            conversation,
            i,
            text,
            created_at=T0 + timedelta(minutes=i),
            role=role,
            author_id=BOT if role == "assistant" else None,
            author_name=name,
            bot_ids=[BOT, OTHER_BOT],
        )
        for i, (role, name, text) in enumerate(LINES)
    ]
    models = ReadModels(stack.db, stack.deps.cipher)
    await ensure_indexes(stack.db)
    await models.apply(events)


def routers(history_limit: int = 6) -> list[Any]:
    """The lore service and a context-assembler that shows ``history_limit`` messages and no memories."""
    settings = AssemblerSettings(
        history_limit=history_limit, memories_limit=0, retrieved_limit=0, legacy_limit=0, remembered_limit=0
    )

    def assembler(deps: Deps) -> Any:
        return assembler_router(deps, settings)

    return [lore_router, assembler]


async def call(nc: NatsClient, subject: str, body: bytes | dict[str, Any]) -> dict[str, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    reply = await request_reply(nc, subject, data, timeout=20)
    result: dict[str, Any] = json.loads(reply.data)
    return result


def assemble_request(tenant: str, bot: str = BOT, conversation: str = CONV) -> dict[str, Any]:
    return {"tenant_id": tenant, "user_id": USER, "conversation_id": conversation, "bot_id": bot,
            "persona_id": None, "user_message": "Is the Command Center far?", "max_tokens": 3000}  # fmt: skip


@pytest.fixture
def book(shared_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((shared_dir / "fixtures/lorebooks/chub-wi_lythora-station.json").read_text())
    return data


def import_request(tenant: str, book: dict[str, Any], **over: Any) -> dict[str, Any]:
    base = {"tenant_id": tenant, "owner_user_id": "creator-1", "name": "Lythora Station", "data": book,
            "attach_to_bots": [BOT]}  # fmt: skip
    return {**base, **over}


async def test_import_export_and_keyword_lore_in_context(nats_url, mongo_url, db_name, book, tenant):
    other_tenant = f"{tenant}-other"
    async with running(nats_url, mongo_url, db_name, routers()) as stack:
        await seed(stack, tenant)
        await seed(stack, other_tenant)  # same bots, user and conversation ids under another tenant
        imported = await call(stack.nc, subjects.LORE_IMPORT, import_request(tenant, book))
        again = await call(stack.nc, subjects.LORE_IMPORT, import_request(tenant, book))
        exported = await call(
            stack.nc, subjects.LORE_EXPORT, {"tenant_id": tenant, "lorebook_id": imported["lorebook_id"]}
        )
        foreign_export = await call(
            stack.nc, subjects.LORE_EXPORT, {"tenant_id": other_tenant, "lorebook_id": imported["lorebook_id"]}
        )
        with_bot = await call(stack.nc, subjects.CONTEXT_ASSEMBLE, assemble_request(tenant))
        other_bot = await call(stack.nc, subjects.CONTEXT_ASSEMBLE, assemble_request(tenant, bot=OTHER_BOT))
        other_tenant_reply = await call(stack.nc, subjects.CONTEXT_ASSEMBLE, assemble_request(other_tenant))

    book_id = imported["lorebook_id"]
    assert imported["entries"] == 8
    assert imported["format"] == "chub"
    assert [(w["uid"], w["field"]) for w in imported["warnings"]] == [(3, "position")]
    assert "position: 10" in imported["warnings"][0]["message"]
    assert again == imported, "re-importing the same file is idempotent"

    assert exported["name"] == "Lythora Station"
    original = import_lorebook(book).book.entries
    assert import_lorebook(exported["data"]).book.entries == original
    assert foreign_export["error"]["code"] == "not_found"

    names = [s["name"] for s in with_bot["sections"]]
    assert names == ["system", "directive", "history"], (
        "entry 4 is placed before the character (position 0): in `system`"
    )
    system = with_bot["sections"][0]["text"]
    assert LAB_TEXT in system
    assert HUB_TEXT not in with_bot["context"], "entry 3 (position 10) is activated but inserted nowhere, as in ST"
    lab = next(s for s in with_bot["sources"] if s["kind"] == "lore" and s["id"] == f"{book_id}.4")
    assert lab["detail"] == "key: Research Labs (secondary: Marine Lab)"
    assert with_bot["degraded"] == []
    assert with_bot["token_count"] == sum(s["tokens"] for s in with_bot["sections"]) <= 3000

    for reply in (other_bot, other_tenant_reply):
        assert "error" not in reply
        assert "lore" not in [s["name"] for s in reply["sections"]]
        assert not [s for s in reply["sources"] if s["kind"] == "lore"]
        assert "Lythora" not in reply["context"]


async def test_attach_to_a_conversation_and_replay(nats_url, mongo_url, db_name, book, tenant):
    async with running(nats_url, mongo_url, db_name, routers()) as stack:
        await seed(stack, tenant)
        await seed(stack, tenant, conversation="c2")
        imported = await call(stack.nc, subjects.LORE_IMPORT, import_request(tenant, book, attach_to_bots=[]))
        book_id = imported["lorebook_id"]
        before = await call(stack.nc, subjects.CONTEXT_ASSEMBLE, assemble_request(tenant, bot=OTHER_BOT))
        attach = {"tenant_id": tenant, "lorebook_id": book_id,
                  "conversation": {"user_id": USER, "conversation_id": CONV}}  # fmt: skip
        attached = await call(stack.nc, subjects.LORE_ATTACH, attach)
        unknown = await call(stack.nc, subjects.LORE_ATTACH, {**attach, "lorebook_id": "nope"})
        foreign = await call(stack.nc, subjects.LORE_ATTACH, {**attach, "tenant_id": f"{tenant}-x"})
        no_target = await call(stack.nc, subjects.LORE_ATTACH, {"tenant_id": tenant, "lorebook_id": book_id})
        in_conv = await call(stack.nc, subjects.CONTEXT_ASSEMBLE, assemble_request(tenant, bot=OTHER_BOT))
        elsewhere = await call(stack.nc, subjects.CONTEXT_ASSEMBLE, assemble_request(tenant, conversation="c2"))

        # `mnemo replay` rebuilds the lore read model from the log alone.
        read_model = LoreReadModel(stack.db, stack.deps.cipher)
        await drop(stack.db, LORE)
        assert await read_model.attached(tenant, OTHER_BOT, USER, CONV) == []
        await read_model.apply([e async for e in stack.store.read_all()])
        refs = await read_model.attached(tenant, OTHER_BOT, USER, CONV)
        rebuilt = await read_model.book(tenant, book_id)

    assert not [s for s in before["sources"] if s["kind"] == "lore"], "not attached yet"
    assert attached == {"lorebook_id": book_id, "bot_ids": [], "conversation": attach["conversation"]}
    assert unknown["error"]["code"] == "not_found"
    assert foreign["error"]["code"] == "not_found"
    assert no_target["error"]["code"] == "bad_request"
    assert any(s["kind"] == "lore" and s["id"] == f"{book_id}.4" for s in in_conv["sources"])
    assert not [s for s in elsewhere["sources"] if s["kind"] == "lore"], "another conversation of the same user"
    assert [(r.lorebook_id, r.source) for r in refs] == [(book_id, "chat")]
    assert rebuilt is not None
    assert len(rebuilt.book.entries) == 8
    assert rebuilt.name == "Lythora Station"


async def test_bad_files_and_requests_get_error_replies(nats_url, mongo_url, db_name, tenant):
    async with running(nats_url, mongo_url, db_name, routers()) as stack:
        cases = {
            "not_json": import_request(tenant, {}, data=None, data_base64=base64.b64encode(b"{oops").decode()),
            "not_a_book": import_request(tenant, {"hello": "world"}),
            "bad_base64": import_request(tenant, {}, data=None, data_base64="***"),
            "no_file": import_request(tenant, {}, data=None),
            "bad_entries": import_request(tenant, {"entries": [1, 2], "spec": "lorebook_v3"}),
        }
        replies = {name: await call(stack.nc, subjects.LORE_IMPORT, body) for name, body in cases.items()}
        replies["garbage"] = await call(stack.nc, subjects.LORE_IMPORT, b"{not json")
        replies["unknown_field"] = await call(stack.nc, subjects.LORE_EXPORT, {"tenant_id": tenant, "x": 1})
    for name, reply in replies.items():
        assert set(reply) == {"error"}, name
        assert reply["error"]["code"] == "bad_request", name
    assert "not valid JSON" in replies["not_json"]["error"]["message"]
    assert "not a lorebook" in replies["not_a_book"]["error"]["message"]
    assert "base64" in replies["bad_base64"]["error"]["message"]
    assert "exactly one of" in replies["no_file"]["error"]["message"]
    assert "lorebook_id" in replies["unknown_field"]["error"]["message"]
