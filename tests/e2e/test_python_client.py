"""The Python client (clients/python) against the whole embedded stack: chat events published and buffered,
a typed context, lore import / export / attach / entries, memories listed, converted and deleted, knowledge
promotion, and error codes as exceptions; the sync client the same way. And the documented examples as a user
runs them: `pip install ./clients/python` alone in a fresh venv, then the README's worked example, as written (it
publishes a scene and prints a context), and the sync client's example of clients/python/README.md (its URL
pointed at the test's stack)."""

from __future__ import annotations

import asyncio
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from mnemo_client import (
    BadRequest,
    BotUpserted,
    ChatMessage,
    ContextAssembleReply,
    MessageCreated,
    MnemoClient,
    NotFound,
    Section,
    SyncMnemoClient,
)
from tests.e2e.fresh_venv import ROOT, doc_block, isolated_env, make_venv, pip_install
from tests.e2e.scenes import LIGHTHOUSE as LINES
from tests.e2e.stackproc import SECURE, StackProcess
from tests.waiting import wait_for_stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TENANT, USER, CONV, BOT = "t-client", "u-1", "c-1", "maren"
ENTRY = {"uid": 0, "key": ["lighthouse"], "content": "The lighthouse keeper is a retired smuggler.", "position": 0}
BOOK = {"entries": {"0": {**ENTRY, "order": 100}}}


def line(i: int) -> MessageCreated:
    return MessageCreated(
        tenant_id=TENANT,
        user_id=USER,
        conversation_id=CONV,
        message_id=f"m-{i}",
        role="user" if i % 2 == 0 else "assistant",
        content=LINES[i % len(LINES)],
        created_at=datetime(2026, 10, 1, 20, 0, tzinfo=UTC) + timedelta(minutes=i),
        bot_ids=[BOT],
    )


async def test_the_async_client_covers_the_contract(stack: StackProcess) -> None:
    async with await MnemoClient.connect(stack.nats_url, **stack.client_options()) as mnemo:
        bot = BotUpserted(tenant_id=TENANT, bot_id=BOT, name="Maren", updated_at=datetime(2026, 10, 1, tzinfo=UTC))
        await mnemo.publish(bot)
        for i in range(3):
            await mnemo.publish(line(i))
        for i in range(3, 12):
            mnemo.submit(line(i))  # buffered, published in order in the background
        await mnemo.flush()
        assert mnemo.buffered == 0

        book = await mnemo.lore_import(tenant_id=TENANT, owner_user_id=USER, name="Coast", data=BOOK)
        assert book.entries == 1
        attached = await mnemo.lore_attach(tenant_id=TENANT, lorebook_id=book.lorebook_id, bot_ids=[BOT])
        assert attached.bot_ids == [BOT]

        reply: dict[str, Any] = {}

        async def whole_scene() -> bool:
            reply["r"] = await mnemo.context(TENANT, USER, CONV, BOT, user_message="Tell me about the lighthouse.")
            return LINES[11 % len(LINES)] in reply["r"].context and "retired smuggler" in reply["r"].context

        await wait_for_stack(whole_scene, "the scene and the lore entry in the context")
        context = reply["r"]
        assert isinstance(context, ContextAssembleReply)
        assert all(isinstance(s, Section) for s in context.sections)
        assert "history" in {s.name for s in context.sections}
        assert any(s.kind == "lore" and s.detail and "lighthouse" in s.detail for s in context.sources)
        assert all(isinstance(m, ChatMessage) for m in context.messages)
        assert context.messages[0].role == "system"

        created = await mnemo.lore_entry_create(
            tenant_id=TENANT,
            user_id=USER,
            lorebook_id=book.lorebook_id,
            entry={"key": ["wreck"], "content": "The wreck is the Meridian."},
        )
        updated = await mnemo.lore_entry_update(
            tenant_id=TENANT,
            user_id=USER,
            lorebook_id=book.lorebook_id,
            uid=created.uid,
            changes={"content": "The wreck is the Aurora."},
        )
        assert updated.changed
        assert updated.entry["content"] == "The wreck is the Aurora."
        exported = await mnemo.lore_export(tenant_id=TENANT, lorebook_id=book.lorebook_id)
        assert {e["content"] for e in exported.data["entries"].values()} == {
            BOOK["entries"]["0"]["content"],
            "The wreck is the Aurora.",
        }
        deleted = await mnemo.lore_entry_delete(
            tenant_id=TENANT, user_id=USER, lorebook_id=book.lorebook_id, uid=created.uid
        )
        assert deleted.deleted

        with pytest.raises(NotFound) as unknown_book:
            await mnemo.lore_export(tenant_id=TENANT, lorebook_id="no-such-book")
        assert unknown_book.value.code == "not_found"
        with pytest.raises(BadRequest) as not_a_book:
            await mnemo.lore_import(tenant_id=TENANT, owner_user_id=USER, name="Junk", data_base64="bm90IGEgYm9vaw==")
        assert not_a_book.value.code == "bad_request"
        with pytest.raises(ValidationError):  # refused locally, by the services' own model
            await mnemo.lore_attach(tenant_id=TENANT, lorebook_id=book.lorebook_id)
        with pytest.raises(NotFound):
            await mnemo.knowledge_promote(tenant_id=TENANT, user_id=USER, fact_id="no-such-fact", campaign_id="kestrel")

        async def summarised() -> bool:
            listing = await mnemo.memories_list(tenant_id=TENANT, user_id=USER, source="memory")
            reply["m"] = listing
            return any(item.source == "memory" for item in listing.items)

        await wait_for_stack(summarised, "a summary of the scene")
        memory = next(item for item in reply["m"].items if item.source == "memory")
        converted = await mnemo.memory_convert_to_lore(
            tenant_id=TENANT, user_id=USER, memory_id=memory.id, applies_to_bots=[BOT]
        )
        assert converted.created
        gone = await mnemo.memory_delete(tenant_id=TENANT, user_id=USER, memory_id=memory.id)
        assert gone.deleted
        assert gone.legacy_ids == [converted.legacy_id]


async def test_the_sync_client_from_a_thread_without_a_loop(stack: StackProcess) -> None:
    def use() -> tuple[str, str]:
        with SyncMnemoClient(stack.nats_url, **stack.client_options()) as mnemo:
            mnemo.submit(line(0).model_copy(update={"conversation_id": "c-sync"}))
            mnemo.flush(timeout=60)
            book = mnemo.lore_book_create(tenant_id=TENANT, owner_user_id=USER, name="Sync book")
            try:
                mnemo.memory_delete(tenant_id=TENANT, user_id=USER, memory_id="no-such-memory")
            except NotFound as exc:
                return book.lorebook_id, exc.code
            return book.lorebook_id, "no error"

    book_id, code = await asyncio.to_thread(use)
    assert book_id
    assert code == "not_found"


@pytest.mark.skipif(SECURE, reason="the documented examples connect as `make run` serves, without credentials or TLS")
def test_the_documented_python_examples_run_in_a_fresh_venv(stack: StackProcess, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    pip_install(python, str(ROOT / "clients" / "python"), cwd=tmp_path)
    alone = subprocess.run(
        [str(python), "-c", "import mnemo.shared.contract_registry"], env=isolated_env(), cwd=tmp_path
    )
    assert alone.returncode != 0, "the client must install without the server package"

    def run_example(name: str, code: str) -> str:
        script = tmp_path / name
        script.write_text(code)
        run = subprocess.run(
            [str(python), str(script)],
            env=isolated_env(MNEMO_NATS_URL=stack.nats_url),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, f"{name}:\n{run.stderr}"
        return run.stdout

    out = run_example("example.py", doc_block("README.md", "A worked example", "python"))
    assert "('history'," in out, out
    assert "Its needle points at storms, not north." in out, "the context with the scene's last line"

    sync = doc_block("clients/python/README.md", "The sync client", "python")
    assert "nats://127.0.0.1:4222" in sync, "the example connects where `make run` serves"
    out = run_example("sync_example.py", sync.replace("nats://127.0.0.1:4222", stack.nats_url))
    assert "not_found" in out, out
    assert " 1 []" in out, f"the imported book's id, its one entry and no warnings: {out}"
