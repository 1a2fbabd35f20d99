"""`mnemo replay` on a stack holding documents, through the public contract and the CLI only (issue 18).

A stack (`make run` as a process) imports two documents for one bot and deletes one of them; it is stopped
and `mnemo replay` rebuilds every read model and the vector index from the event log alone (it drops them
first). On the restarted stack the live document is back as it was (state, chunk count, the list) and its
passage reaches the context again with its name in ``sources``; the deleted one stays ``deleted``, out of the
list and out of the context.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client

from mnemo.shared import subjects
from tests.e2e.stackproc import StackProcess
from tests.waiting import wait_for_stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TENANT, OWNER, USER, BOT = "replay-docs", "creator-7", "player-7", "bot-archivist"
KEPT = "The tide bells of Qarrow ring thrice when the salt moon rises over the eastern reef."
DELETED = "The lighthouse keeper of Vellmoor trades copper nails for stories about drowned kings."
QUESTION = "What do the tide bells of Qarrow do when the salt moon rises, and why would lighthouse keepers care?"


def document(heading: str, passage: str) -> str:
    filler = " ".join(f"Entry {i} of the harbour ledger lists crates of rope, tar and lamp oil." for i in range(40))
    return f"# {heading}\n\n## Ledger\n\n{filler}\n\n## Customs\n\n{passage}\n"


async def rpc(nc: Client, subject: str, body: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads((await nc.request(subject, json.dumps(body).encode(), timeout=timeout)).data)
    return reply


async def imported(nc: Client, name: str, text: str) -> dict[str, Any]:
    body = {"tenant_id": TENANT, "owner_user_id": OWNER, "name": name, "attach_to_bots": [BOT],
            "data_base64": base64.b64encode(text.encode()).decode()}  # fmt: skip
    accepted = await rpc(nc, subjects.LORE_DOCUMENT_IMPORT, body)
    assert accepted.get("status") == "accepted", accepted
    state: dict[str, Any] = {}

    async def ended() -> bool:
        state.update(
            await rpc(nc, subjects.LORE_DOCUMENT_GET, {"tenant_id": TENANT, "document_id": accepted["document_id"]})
        )
        return state.get("status") in ("completed", "failed")

    await wait_for_stack(ended, f"{name} imported", timeout=300)
    assert state["status"] == "completed", state
    return state


def ask() -> dict[str, Any]:
    return {"tenant_id": TENANT, "user_id": USER, "conversation_id": "c-replay", "bot_id": BOT, "persona_id": None,
            "user_message": QUESTION, "max_tokens": 4000}  # fmt: skip


async def context_quoting(nc: Client, *passages: str) -> dict[str, Any]:
    reply: dict[str, Any] = {}

    async def found() -> bool:
        reply.clear()
        reply.update(await rpc(nc, subjects.CONTEXT_ASSEMBLE, ask()))
        return all(p in " ".join(reply.get("context", "").split()) for p in passages)

    await wait_for_stack(found, f"a context quoting {len(passages)} document(s)", timeout=300)
    return reply


def sources_of(reply: dict[str, Any], document_id: str) -> set[str]:
    """The ids of the reply's document sources that are chunks of ``document_id``."""
    return {s["id"] for s in reply["sources"] if s["kind"] == "document" and s["id"].startswith(document_id)}


async def test_replay_brings_a_live_document_back_and_keeps_a_deleted_one_gone(tmp_path: Path) -> None:
    stack = StackProcess(tmp_path / "stack")
    stack.start()
    try:
        nc = await nats.connect(stack.nats_url, **stack.client_options())
        try:
            kept = await imported(nc, "qarrow.md", document("Qarrow harbour", KEPT))
            gone = await imported(nc, "vellmoor.md", document("Vellmoor harbour", DELETED))
            before = await context_quoting(nc, KEPT, DELETED)  # both are searchable before the delete
            deleted = await rpc(nc, subjects.LORE_DOCUMENT_DELETE,
                                {"tenant_id": TENANT, "user_id": OWNER, "document_id": gone["document_id"]})  # fmt: skip
            assert deleted == {"document_id": gone["document_id"], "deleted": True}
        finally:
            await nc.drain()
        assert stack.stop() == 0, stack.log_tail()

        done = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "mnemo.runtime.cli", "replay", "--data-dir", str(stack.data_dir),
             "--nats-url", stack.nats_url, "--mongodb-url", stack.mongo_url],
            cwd=ROOT, capture_output=True, text=True, timeout=600, env=_env(),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert "document.chunked" in done.stdout, done.stdout[-3000:]
        assert "document.deleted" in done.stdout, done.stdout[-3000:]

        stack.start()
        nc = await nats.connect(stack.nats_url, **stack.client_options())
        try:
            state = await rpc(nc, subjects.LORE_DOCUMENT_GET, {"tenant_id": TENANT, "document_id": kept["document_id"]})
            still_gone = await rpc(
                nc, subjects.LORE_DOCUMENT_GET, {"tenant_id": TENANT, "document_id": gone["document_id"]}
            )
            listed = await rpc(nc, subjects.LORE_DOCUMENT_LIST, {"tenant_id": TENANT})
            after = await context_quoting(nc, KEPT)
        finally:
            await nc.drain()
    finally:
        stack.stop()

    assert {k: state[k] for k in ("status", "chunks", "pages", "tokens", "active_version")} == {
        k: kept[k] for k in ("status", "chunks", "pages", "tokens", "active_version")
    }
    assert (still_gone["status"], still_gone["active_version"]) == ("deleted", None), still_gone
    assert [d["document_id"] for d in listed["documents"]] == [kept["document_id"]]
    assert sources_of(before, gone["document_id"])
    assert sources_of(after, kept["document_id"]) == sources_of(before, kept["document_id"]) != set()
    assert not sources_of(after, gone["document_id"])
    assert any("qarrow.md" in (s["detail"] or "") for s in after["sources"] if s["kind"] == "document")
    assert DELETED not in after["context"]


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "COLUMNS": "200"}
