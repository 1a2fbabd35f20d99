"""Erasure by crypto-shredding and export, on the whole embedded stack (docs/privacy.md).

Two users of one tenant chat (summaries and facts follow), keep a persona and, for alice, a lorebook and an
uploaded document (its bytes in MNEMO_UPLOADS, its chunks in the log, the read model and the vectors). Alice
is exported (RPC and ``mnemo export-user``), then erased. Afterwards, reading MongoDB's raw documents and every
JetStream stream with every key left in the key store finds nothing of alice, neither decryptable nor plain;
she has no read-model rows, facts or vectors; bob's context is unchanged; and ``mnemo replay`` (the stack
stopped) brings none of it back.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from pymongo import MongoClient

from mnemo.shared.readmodels import catalog
from tests.e2e.context_replies import missed_parts, whole_reply
from tests.e2e.scenes import turn
from tests.e2e.shredding import Found, data_keys, inspect, inspect_body
from tests.e2e.stackproc import StackProcess
from tests.e2e.subjects import ERASE_TENANT
from tests.waiting import request_reply, wait_for_stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TENANT = "t-privacy"
ALICE, BOB = "alice", "bob"
# Words only each user ever writes: what must vanish (alice) or stay (bob).
ALICE_WORDS = ("Quillfeather", "Marrowglen")
BOB_WORDS = ("Driftwood",)
LINES = {
    ALICE: [
        "I live in Quillfeather, by the old mill.",
        "The Quillfeather mill grinds barley for the whole valley.",
        "My sister keeps bees behind the mill in Quillfeather.",
        "We walked up to the ridge above Quillfeather at noon.",
        "The honey from Quillfeather tastes of heather.",
        "Tomorrow we ride to the Quillfeather fair together.",
    ],
    BOB: [
        "I live in Driftwood, on the harbour wall.",
        "The Driftwood boats go out before dawn.",
        "My father mends nets on the Driftwood quay.",
        "We watched the storm roll over Driftwood bay.",
        "The Driftwood lighthouse has a new lens.",
        "Tomorrow the Driftwood market opens early.",
    ],
}
CREATED, PERSONA = "mnemo.chat.message.created.v1", "mnemo.chat.persona.upserted.v1"
ASSEMBLE, LIST = "mnemo.rpc.context.assemble.v1", "mnemo.rpc.memory.list.v1"
ERASE, EXPORT = "mnemo.rpc.privacy.erase_user.v1", "mnemo.rpc.privacy.export_user.v1"
BOOK_CREATE, ENTRY_CREATE = "mnemo.rpc.lore.book.create.v1", "mnemo.rpc.lore.entry.create.v1"
DOCUMENT_IMPORT, DOCUMENT_GET = "mnemo.rpc.lore.document.import.v1", "mnemo.rpc.lore.document.get.v1"
NOT_READ_MODELS = {"events", "relay_intents", "relay_receipts", "relay_state", "tenant_keys", "erased_keys"}
T0 = datetime(2026, 10, 1, 20, 0, tzinfo=UTC)


async def call(nc: nats.NATS, subject: str, body: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads((await request_reply(nc, subject, json.dumps(body).encode(), timeout=60)).data)
    assert "error" not in reply, reply
    return reply


async def seed(nc: nats.NATS) -> None:
    js = nc.jetstream()
    for user, marker in ((ALICE, ALICE_WORDS[1]), (BOB, BOB_WORDS[0])):
        persona = {"tenant_id": TENANT, "user_id": user, "persona_id": f"p-{user}", "name": f"{user} the bold",
                   "description": f"Born in {marker}.", "traits": ["brave"], "updated_at": T0.isoformat()}  # fmt: skip
        await js.publish(PERSONA, json.dumps(persona).encode())
        for i, line in enumerate(LINES[user]):
            body = turn(i, line, T0 + timedelta(minutes=i), tenant=TENANT, user=user, conv=f"c-{user}",
                        message_id=f"m-{user}-{i}", persona=(f"p-{user}", user), bot=("bot-1", "Sage"))  # fmt: skip
            await js.publish(CREATED, json.dumps(body).encode())
    book = await call(nc, BOOK_CREATE, {"tenant_id": TENANT, "owner_user_id": ALICE, "name": f"{ALICE_WORDS[1]} lore"})
    entry = {"key": ["mill"], "content": f"The {ALICE_WORDS[1]} mill is haunted.", "activationMode": "hybrid"}
    req = {"tenant_id": TENANT, "user_id": ALICE, "lorebook_id": book["lorebook_id"], "entry": entry}
    await call(nc, ENTRY_CREATE, req)
    text = f"# The {ALICE_WORDS[0]} Chronicle\n\nThe {ALICE_WORDS[0]} mill was raised by the {ALICE_WORDS[1]} masons."
    doc = {"tenant_id": TENANT, "owner_user_id": ALICE, "name": f"{ALICE_WORDS[0]} chronicle.md",
           "data_base64": base64.b64encode(text.encode()).decode(), "attach_to_bots": ["bot-1"]}  # fmt: skip
    made = await call(nc, DOCUMENT_IMPORT, doc)

    async def imported() -> bool:
        state = await call(nc, DOCUMENT_GET, {"tenant_id": TENANT, "document_id": made["document_id"]})
        assert state["status"] != "failed", state
        return bool(state["status"] == "completed")

    await wait_for_stack(imported, "alice's document imported")


async def memories(nc: nats.NATS, user: str) -> dict[str, Any]:
    return await call(nc, LIST, {"tenant_id": TENANT, "user_id": user, "source": "all", "limit": 200})


async def context(nc: nats.NATS, user: str, question: str) -> dict[str, Any]:
    body = {"tenant_id": TENANT, "user_id": user, "conversation_id": f"c-{user}", "bot_id": "bot-1",
            "persona_id": f"p-{user}", "user_message": question, "max_tokens": 4000}  # fmt: skip
    return await call(nc, ASSEMBLE, body)


async def whole_context(nc: nats.NATS, user: str, question: str, like: dict[str, Any] | None = None) -> dict[str, Any]:
    """The user's context once it misses no part (and equals ``like``, given it): what this suite checks is
    what erasure leaves, so a reply missing a part is asked again rather than compared."""
    return await whole_reply(lambda: context(nc, user, question), f"{user}'s whole context", like)


async def settled(nc: nats.NATS, user: str) -> dict[str, Any]:
    """The user's memories once summaries and facts are made and stop changing."""
    last: list[Any] = []

    async def stable() -> bool:
        items = (await memories(nc, user))["items"]
        kinds = {i["source"] for i in items}
        done = {"memory", "knowledge"} <= kinds and items == last
        last[:] = items
        return done

    await wait_for_stack(stable, f"{user}'s summaries and facts")
    return {"items": last}


def scan_mongo(stack: StackProcess) -> tuple[Found, dict[str, list[dict[str, Any]]]]:
    """Every raw document tried with every key left; the read-model rows by collection."""
    with MongoClient(stack.mongo_url) as client:
        db = client["mnemo"]
        keys = data_keys(stack.data_dir / "kek.b64", list(db["tenant_keys"].find()))
        found, rows = Found(), {}
        for name in db.list_collection_names():
            docs = list(db[name].find())
            for doc in docs:
                inspect(doc, keys, found)
            if name not in NOT_READ_MODELS:
                rows[name] = docs
    return found, rows


def read_models_undeclared_or_without_tenant_index(stack: StackProcess) -> list[str]:
    """Erasure sweeps the collections of the projection catalog and reads a tenant's rows of each
    (mnemo/shared/readmodels/rows.py): a collection of the running stack that the catalog does not declare would
    escape erasure and replay, and one without an index that starts with ``tenant_id`` would be read whole by
    each erasure."""
    declared = {c.name for c in catalog.erasable()}
    with MongoClient(stack.mongo_url) as client:
        db = client["mnemo"]
        names = [n for n in db.list_collection_names() if n not in NOT_READ_MODELS and not n.startswith("system.")]
        return [
            name
            for name in names
            if name not in declared or not any(next(iter(i["key"])) == "tenant_id" for i in db[name].list_indexes())
        ]


async def scan_streams(stack: StackProcess) -> Found:
    with MongoClient(stack.mongo_url) as client:
        keys = data_keys(stack.data_dir / "kek.b64", list(client["mnemo"]["tenant_keys"].find()))
    nc = await nats.connect(stack.nats_url, **stack.client_options("admin"))  # the platform cannot read streams
    try:
        return await _scan(nc, keys)
    finally:
        await nc.close()


async def _scan(nc: nats.NATS, keys: dict[str, Any]) -> Found:
    js, found = nc.jetstream(), Found()
    streams = {s.config.name: s for s in await js.streams_info()}
    assert {"MNEMO_CHAT", "MNEMO_LOG", "MNEMO_DLQ"} <= set(streams)
    for name, info in streams.items():  # MNEMO_POINTS too in stream mode
        if not info.state.messages:
            continue
        config = ConsumerConfig(ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.ALL)
        assert info.config.subjects
        sub = await js.pull_subscribe(info.config.subjects[0], stream=name, config=config)
        while True:
            try:
                msgs = await sub.fetch(500, timeout=3)
            except TimeoutError:  # nats-py's, or asyncio's raised from inside fetch (nats-py's subclasses it)
                break
            for msg in msgs:
                inspect_body(msg.data, keys, found)
            if msgs[-1].metadata.num_pending == 0:
                break
        await sub.unsubscribe()
    return found


def of_user(rows: dict[str, list[dict[str, Any]]], user: str) -> dict[str, int]:
    def owned(d: dict[str, Any]) -> bool:
        return d.get("tenant_id") == TENANT and user in (d.get("user_id"), d.get("owner_user_id"))

    return {name: n for name, docs in rows.items() if (n := sum(owned(d) for d in docs))}


def assert_nothing_of_alice(found: Found, where: str) -> None:
    readable = found.readable()
    for word in ALICE_WORDS:
        assert word not in readable, f"{where}: alice's {word!r} is still readable"
    assert BOB_WORDS[0] in readable, f"{where}: the scan reads bob's text (so it would see alice's)"


async def test_erase_user_shreds_everything_of_alice_and_keeps_bob(stack: StackProcess, tmp_path: Path) -> None:
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        await seed(nc)
        await settled(nc, ALICE)
        bob_memories = await settled(nc, BOB)
        bob_before = await whole_context(nc, BOB, "Tell me about Driftwood.")
        assert not missed_parts(bob_before), bob_before["degraded"]
        assert read_models_undeclared_or_without_tenant_index(stack) == []

        export = await call(nc, EXPORT, {"tenant_id": TENANT, "user_id": ALICE})
        text = json.dumps(export)
        assert [len(c["messages"]) for c in export["conversations"]] == [6]
        assert export["conversations"][0]["summaries"]
        assert export["facts"]["bot-1"]
        assert all(word in text for word in ("Quillfeather", "Marrowglen", "haunted"))
        assert "Driftwood" not in text
        assert sorted(b["name"] for b in export["lorebooks"]) == ["Marrowglen lore", "Quillfeather chronicle.md"]
        assert [(d["name"], d["status"]) for d in export["documents"]] == [("Quillfeather chronicle.md", "completed")]
        assert export["personas"][0]["description"] == "Born in Marrowglen."
        out = tmp_path / "alice.json"
        cli = run_cli(stack, "export-user", "--tenant", TENANT, "--user", ALICE, "--out", str(out))
        assert "exported messages: 6" in cli
        assert json.loads(out.read_text()) == export

        erased = await call(nc, ERASE, {"tenant_id": TENANT, "user_id": ALICE})
        assert erased["keys_destroyed"] == 1
        assert erased["deleted"]["stream_messages"] >= 7, "alice's persona and six messages left the chat stream"
        assert erased["deleted"]["uploads"] == 1, "the stored bytes of alice's document are deleted"

        found, rows = scan_mongo(stack)
        assert_nothing_of_alice(found, "MongoDB")
        assert of_user(rows, ALICE) == {}, "no read-model rows, facts or summaries of alice"
        assert of_user(rows, BOB), "bob's rows are there"
        assert_nothing_of_alice(await scan_streams(stack), "JetStream")
        assert (await memories(nc, ALICE))["total"] == 0
        alice_ctx = await context(nc, ALICE, "Tell me about Quillfeather and the mill.")
        assert not [
            s for s in alice_ctx["sources"] if s["kind"] in ("message", "summary", "fact", "lore", "document")
        ], "no vectors or rows of alice are found"
        assert await whole_context(nc, BOB, "Tell me about Driftwood.", like=bob_before) == bob_before
        assert (await memories(nc, BOB))["items"] == bob_memories["items"]
        empty = await call(nc, EXPORT, {"tenant_id": TENANT, "user_id": ALICE})
        assert [empty[k] for k in ("conversations", "legacy_memories", "lorebooks", "personas", "documents")] == [
            []
        ] * 5
        assert empty["facts"] == {}
    finally:
        await nc.close()

    assert stack.stop() == 0
    replayed = run_cli(stack, "replay")
    assert "erased users skipped" in replayed
    stack.start()
    found, rows = scan_mongo(stack)
    assert of_user(rows, ALICE) == {}, "replay brought back no rows of alice"
    assert_nothing_of_alice(found, "MongoDB after replay")
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        assert await whole_context(nc, BOB, "Tell me about Driftwood.", like=bob_before) == bob_before
        assert (await memories(nc, ALICE))["total"] == 0
    finally:
        await nc.close()


async def test_an_erased_user_id_starts_afresh(stack: StackProcess) -> None:
    """A new account with alice's id (after her erasure) creates her book and uploads her document again, the
    same file: their ids are the erased ones (deterministic), yet both are really recorded, not taken for
    retries of what was erased; a repeated create is a retry again."""
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        again = {"tenant_id": TENANT, "owner_user_id": ALICE, "name": f"{ALICE_WORDS[1]} lore"}
        first, second = await call(nc, BOOK_CREATE, again), await call(nc, BOOK_CREATE, again)
        entry = {"key": ["mill"], "content": "The new mill is painted blue.", "activationMode": "keyword"}
        await call(nc, ENTRY_CREATE, {"tenant_id": TENANT, "user_id": ALICE, "lorebook_id": first["lorebook_id"], "entry": entry})  # fmt: skip
        books = await call(nc, "mnemo.rpc.lore.list.v1", {"tenant_id": TENANT, "owner_user_id": ALICE})
        text = (
            f"# The {ALICE_WORDS[0]} Chronicle\n\nThe {ALICE_WORDS[0]} mill was raised by the {ALICE_WORDS[1]} masons."
        )
        doc = {"tenant_id": TENANT, "owner_user_id": ALICE, "name": f"{ALICE_WORDS[0]} chronicle.md",
               "data_base64": base64.b64encode(text.encode()).decode(), "attach_to_bots": ["bot-1"]}  # fmt: skip
        made = await call(nc, DOCUMENT_IMPORT, doc)
        state: dict[str, Any] = {}

        async def imported() -> bool:
            state.update(await call(nc, DOCUMENT_GET, {"tenant_id": TENANT, "document_id": made["document_id"]}))
            return state["status"] in ("completed", "failed")

        await wait_for_stack(imported, "alice's new document imported")
        quoted: dict[str, Any] = {}

        async def in_context() -> bool:
            quoted.update(await context(nc, ALICE, f"Who raised the {ALICE_WORDS[0]} mill?"))
            return f"raised by the {ALICE_WORDS[1]} masons" in quoted["context"]

        await wait_for_stack(in_context, "alice's new document in her context")
    finally:
        await nc.close()
    assert (first["created"], second["created"]) == (True, False), (first, second)
    assert [(b["name"], b["entries"]) for b in books["books"]] == [(f"{ALICE_WORDS[1]} lore", 1)], books
    assert state["status"] == "completed", state
    assert [s for s in quoted["sources"] if s["kind"] == "document"], quoted["sources"]


async def test_erase_tenant_leaves_nothing_of_the_tenant_and_spares_the_others(stack: StackProcess) -> None:
    keep = turn(0, "The Keepsake inn serves cider.", T0, tenant="t-keep", user="k", conv="c", message_id="m-0",
                persona=("p-k", "Kim"), bot=("bot-1", "Sage"))  # fmt: skip
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        await nc.jetstream().publish(CREATED, json.dumps(keep).encode())
        await wait_for_stack(lambda: "Keepsake" in scan_mongo(stack)[0].readable(), "the other tenant's message")
        uploads = await nc.jetstream().object_store("MNEMO_UPLOADS")
        await uploads.put(f"{TENANT}/never-imported.txt", b"uploaded, never imported")  # the platform's upload
        await uploads.put("t-keep/kept.txt", b"another tenant's file")
        refused = json.loads((await request_reply(nc, ERASE_TENANT, json.dumps({"tenant_id": TENANT}).encode())).data)
        assert refused["error"]["code"] == "bad_request", "erasing a tenant needs confirm: erase"

        erased = await call(nc, ERASE_TENANT, {"tenant_id": TENANT, "confirm": "erase"})
        assert erased["keys_destroyed"] >= 2, "bob's key and the tenant's"
        assert erased["deleted"]["uploads"] >= 1, "every file of the tenant, imported or not"
        left = sorted(o.name for o in await uploads.list(ignore_deletes=True))
        assert [n for n in left if n.startswith(f"{TENANT}/")] == []
        assert "t-keep/kept.txt" in left
    finally:
        await nc.close()
    found, rows = scan_mongo(stack)
    readable = found.readable()
    assert not [w for w in (*ALICE_WORDS, *BOB_WORDS, "Sage") if w in readable], "nothing of the tenant reads"
    assert "Keepsake" in readable, "the other tenant is untouched"
    assert not [n for n, docs in rows.items() if any(d.get("tenant_id") == TENANT for d in docs)]


def run_cli(stack: StackProcess, *args: str) -> str:
    env = {**os.environ, "MNEMO_DATA_DIR": str(stack.data_dir), "MNEMO_NATS_URL": stack.nats_url,
           "MNEMO_MONGODB_URL": stack.mongo_url, **stack.client_env()}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "mnemo.runtime.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout
