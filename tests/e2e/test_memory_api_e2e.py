"""The memory API on the whole embedded stack, through the public contract only (plain nats-py and JSON):
remember, search, update, history and forget as a platform and as a game engine, the namespace rules, and an
erasure of the user that leaves nothing of their memories (MongoDB and JetStream scanned with every key left,
then ``mnemo replay``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import nats
import pytest
from pymongo import MongoClient

from tests.e2e.fresh_venv import ROOT
from tests.e2e.shredding import Found, data_keys, inspect
from tests.e2e.stackproc import StackProcess
from tests.e2e.test_privacy import run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REMEMBER, ENGINE_REMEMBER = "mnemo.rpc.memory.remember.v1", "mnemo.rpc.memory.engine.remember.v1"
SEARCH, UPDATE, FORGET = "mnemo.rpc.memory.search.v1", "mnemo.rpc.memory.update.v1", "mnemo.rpc.memory.forget.v1"
HISTORY, ERASE, EXPORT = (
    "mnemo.rpc.memory.history.v1",
    "mnemo.rpc.privacy.erase_user.v1",
    "mnemo.rpc.privacy.export_user.v1",
)
TENANT = "t-memapi"
ASSET = {"uri": "https://cdn.example/hymn.ogg", "media_type": "audio/ogg", "title": "The hymn"}


async def call(nc: nats.NATS, subject: str, body: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads((await nc.request(subject, json.dumps(body).encode(), timeout=30)).data)
    return reply


async def found(nc: nats.NATS, user: str, query: str, want: str | None, **fields: Any) -> list[dict[str, Any]]:
    """The search's results once ``want`` is among them (the embedding service indexes asynchronously); with
    ``want`` None, once the index has had time to take what was written (the caller checks an absence)."""
    body = {"tenant_id": TENANT, "user_id": user, "query": query, **fields}
    deadline = asyncio.get_running_loop().time() + (60 if want else 5)
    while True:
        reply = await call(nc, SEARCH, body)
        assert "results" in reply, reply
        if want is not None and any(h["id"] == want for h in reply["results"]):
            return list(reply["results"])
        if asyncio.get_running_loop().time() > deadline:
            return list(reply["results"])
        await asyncio.sleep(0.5)


def memory(user: str, content: str, **fields: Any) -> dict[str, Any]:
    return {"tenant_id": TENANT, "user_id": user, "owner_namespace": f"player:{user}", "type": "episodic",
            "content": content, **fields}  # fmt: skip


def documented(call: str) -> dict[str, Any]:
    """The request docs/memory-api.md shows under ``### <call>``."""
    section = (ROOT / "docs" / "memory-api.md").read_text().split(f"\n### {call}\n", 1)[1]
    example: dict[str, Any] = json.loads(section.split("```json\n", 1)[1].split("```", 1)[0])
    return example


async def test_the_documented_calls_run_as_written(stack: StackProcess) -> None:
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        made = await call(nc, REMEMBER, documented("remember"))
        assert (made["created"], made["version"], made["title"]) == (
            True,
            1,
            "Ana hid the envoy's letter under the chapel's…",
        )
        mid = made["memory_id"]
        deadline = asyncio.get_running_loop().time() + 60  # the index takes the new memory within moments
        while not (hits := [h for h in (await call(nc, SEARCH, documented("search")))["results"] if h["id"] == mid]):
            assert asyncio.get_running_loop().time() < deadline, "the documented search finds the documented memory"
            await asyncio.sleep(0.5)
        hit = hits[0]
        assert (hit["source"], hit["namespace"], hit["origin"]) == ("memory", "player:u1", "remembered by u1")
        moved = await call(nc, UPDATE, {**documented("update"), "memory_id": mid})
        assert (moved["version"], moved["changed"]) == (2, True)
        history = await call(nc, HISTORY, {**documented("history"), "memory_id": mid})
        assert (history["owner_namespace"], history["user_id"], history["bot_id"]) == ("player:u1", "u1", None)
        assert [(v["change"], v["by_user_id"]) for v in history["versions"]] == [
            ("remembered", "u1"),
            ("updated", "u1"),
        ]
        assert (await call(nc, FORGET, {**documented("forget"), "memory_id": mid})) == {
            "memory_id": mid,
            "forgotten": True,
        }
    finally:
        await nc.close()


async def test_remember_search_update_history_and_forget_as_documented(stack: StackProcess) -> None:
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        made = await call(nc, REMEMBER, memory("ana", "Ana hid the envoy's letter under the chapel's loose stone.",
                                               tags=["npc:envoy"], assets=[ASSET], idempotency_key="e2e-1"))  # fmt: skip
        again = await call(nc, REMEMBER, memory("ana", "Ana hid the envoy's letter under the chapel's loose stone.",
                                                tags=["npc:envoy"], assets=[ASSET], idempotency_key="e2e-1"))  # fmt: skip
        assert (made["created"], again["created"], again["memory_id"]) == (True, False, made["memory_id"])
        mid = made["memory_id"]
        [hit, *_] = await found(nc, "ana", "where is the envoy's letter?", mid)
        assert (hit["id"], hit["namespace"], hit["assets"], hit["tags"]) == (mid, "player:ana", [ASSET], ["npc:envoy"])
        assert set(hit["score_parts"]) == {"dense", "lexical", "recency"}
        assert mid not in [h["id"] for h in await found(nc, "bo", "where is the envoy's letter?", None)]

        forbidden = await call(nc, REMEMBER, memory("ana", "x", owner_namespace="player:bo"))
        shared = await call(nc, REMEMBER, memory("ana", "x", owner_namespace="campaign:kestrel"))
        assert forbidden["error"]["code"] == shared["error"]["code"] == "forbidden"
        campaign = await call(nc, ENGINE_REMEMBER, memory("gm", "The Kestrel owes the smugglers forty crowns.",
                                                          owner_namespace="campaign:kestrel"))  # fmt: skip
        assert campaign["created"], campaign
        assert await found(nc, "bo", "smugglers", campaign["memory_id"], namespaces=["campaign:kestrel"])

        owner = {"tenant_id": TENANT, "user_id": "ana", "memory_id": mid}
        moved = await call(
            nc, UPDATE, {**owner, "content": "Ana moved the letter to the bell tower.", "expected_version": 1}
        )
        stale = await call(nc, UPDATE, {**owner, "content": "A lost update.", "expected_version": 1})
        assert (moved["version"], moved["changed"], stale["error"]["code"]) == (2, True, "conflict")
        [hit, *_] = await found(nc, "ana", "bell tower", mid)
        assert hit["content"] == "Ana moved the letter to the bell tower."
        history = await call(nc, HISTORY, owner)
        assert [(v["version"], v["change"]) for v in history["versions"]] == [(1, "remembered"), (2, "updated")]

        assert (await call(nc, FORGET, owner))["forgotten"] is True
        assert (await call(nc, FORGET, owner))["forgotten"] is False
        assert mid not in [h["id"] for h in await found(nc, "ana", "bell tower letter", None)]
        gone = await call(nc, HISTORY, owner)
        assert gone["forgotten"] is True
        assert [v["change"] for v in gone["versions"]] == ["remembered", "updated", "forgotten"]
        assert all(v.get("content") is None for v in gone["versions"])
    finally:
        await nc.close()


def scan(stack: StackProcess) -> tuple[Found, list[dict[str, Any]]]:
    """Every raw MongoDB document tried with every key left; the memories read model's rows."""
    with MongoClient(stack.mongo_url) as client:
        db = client["mnemo"]
        keys = data_keys(stack.data_dir / "kek.b64", list(db["tenant_keys"].find()))
        out = Found()
        for name in db.list_collection_names():
            for doc in db[name].find():
                inspect(doc, keys, out)
        return out, list(db["rm_memories"].find({"tenant_id": TENANT}))


async def test_erasing_the_user_leaves_nothing_of_their_memories(stack: StackProcess) -> None:
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        zed_asset = {"uri": "https://cdn.example/zed-map.png", "media_type": "image/png"}
        secret = await call(nc, REMEMBER, memory("zed", "Zed buried the quillfeather chest behind the marrowglen mill.",
                                                 tags=["quillfeather"], assets=[zed_asset]))  # fmt: skip
        gm_note = await call(nc, ENGINE_REMEMBER, memory("zed", "Marrowglen is where the campaign of zed begins.",
                                                         owner_namespace="campaign:zedcamp"))  # fmt: skip
        kept = await call(nc, REMEMBER, memory("yan", "Yan keeps a driftwood flute."))
        await found(nc, "zed", "quillfeather chest", secret["memory_id"])
        await found(nc, "yan", "driftwood flute", kept["memory_id"])
        exported = await call(nc, EXPORT, {"tenant_id": TENANT, "user_id": "zed"})
        assert {m["id"] for m in exported["memories"]} == {secret["memory_id"], gm_note["memory_id"]}
        assert "quillfeather" in json.dumps(exported)

        erased = await call(nc, ERASE, {"tenant_id": TENANT, "user_id": "zed"})
        assert erased["keys_destroyed"] == 1
        assert (await call(nc, EXPORT, {"tenant_id": TENANT, "user_id": "zed"}))["memories"] == []
        assert (
            await found(nc, "zed", "quillfeather chest marrowglen", None, namespaces=["player:zed", "campaign:zedcamp"])
            == []
        )
        history = await call(nc, HISTORY, {"tenant_id": TENANT, "user_id": "zed", "memory_id": secret["memory_id"]})
        assert history["error"]["code"] == "not_found"
        readable, rows = scan(stack)
        assert not [w for w in ("quillfeather", "marrowglen", "zed-map.png") if w in readable.readable().lower()]
        assert "zed" not in {r["user_id"] for r in rows}
        assert kept["memory_id"] in {r["_id"] for r in rows}
    finally:
        await nc.close()

    assert stack.stop() == 0
    assert "replay done" in run_cli(stack, "replay")
    stack.start()
    readable, rows = scan(stack)
    assert not [r for r in rows if r["user_id"] == "zed"], "replay brought back no memory of zed"
    assert "quillfeather" not in readable.readable().lower()
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        assert await found(nc, "yan", "driftwood flute", kept["memory_id"]), "replay re-indexed yan's memory"
    finally:
        await nc.close()
