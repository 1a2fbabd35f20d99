"""The memory API's writes on ``TestNatsBroker`` (in-memory log and read model): remember, update, forget and
history, the namespace rules (``forbidden``, ``not_found``), idempotency and versions, and what is published."""

from __future__ import annotations

import pytest

from mnemo.services.memory.app import create_router
from mnemo.shared import subjects
from mnemo.shared.events.recorded import memory_stream
from mnemo.shared.readmodels.catalog import MEMORIES
from tests.components import deps, published, served

T, U1, U2 = "t1", "u1", "u2"
ASSET = {"uri": "https://cdn.example/hymn.ogg", "media_type": "audio/ogg", "title": "The hymn"}


@pytest.fixture
async def api():
    d = deps()
    async with served(create_router(d)) as rpc:
        yield rpc, d, d.read_model(MEMORIES)


def remember(user: str = U1, **fields):
    return {"tenant_id": T, "user_id": user, "owner_namespace": f"player:{user}", "type": "episodic",
            "content": "Ana hid the envoy's letter under the chapel's loose stone.", **fields}  # fmt: skip


def code(reply):
    assert set(reply) == {"error"}, reply
    return reply["error"]["code"]


async def test_a_player_remembers_in_their_own_namespace_with_assets_and_a_derived_title(api):
    rpc, d, memories = api
    reply = await rpc(
        subjects.MEMORY_REMEMBER, remember(tags=["npc:envoy"], assets=[ASSET], metadata={"session_id": "s1"})
    )

    assert reply["created"] is True
    assert reply["version"] == 1
    assert reply["title"] == "Ana hid the envoy's letter under the chapel's…"
    [row] = await memories.by_ids(T, [reply["memory_id"]])
    assert (row.owner_namespace, row.tags, row.assets, row.metadata) == (
        "player:u1",
        ("npc:envoy",),
        (ASSET,),
        {"session_id": "s1"},
    )
    [event] = published(d).of_type("memory.remembered")
    assert event.payload["content"].startswith("Ana hid")
    assert event.stream_id == memory_stream(T, reply["memory_id"])
    stored = d.store.docs[event.event_id]  # as the log keeps it: the user's text, tags and assets encrypted
    assert not any(word in str(stored) for word in ("Ana hid", "npc:envoy", "hymn.ogg", "session_id"))


async def test_another_players_namespace_is_forbidden_and_so_are_shared_ones_without_the_engine_right(api):
    rpc, _, memories = api
    other = await rpc(subjects.MEMORY_REMEMBER, remember(owner_namespace="player:u2"))
    campaign = await rpc(subjects.MEMORY_REMEMBER, remember(owner_namespace="campaign:kestrel"))
    engine_other = await rpc(subjects.MEMORY_ENGINE_REMEMBER, remember(owner_namespace="player:u2"))
    engine_campaign = await rpc(subjects.MEMORY_ENGINE_REMEMBER, remember(owner_namespace="campaign:kestrel"))

    assert (code(other), code(campaign), code(engine_other)) == ("forbidden", "forbidden", "forbidden")
    assert "engine" in campaign["error"]["message"]
    assert engine_campaign["created"] is True
    assert [r.owner_namespace for r in memories.rows.values()] == ["campaign:kestrel"]


async def test_remember_is_idempotent_with_a_key_and_refuses_the_key_for_another_memory(api):
    rpc, d, _ = api
    first = await rpc(subjects.MEMORY_REMEMBER, remember(idempotency_key="k1"))
    again = await rpc(subjects.MEMORY_REMEMBER, remember(idempotency_key="k1"))
    other = await rpc(subjects.MEMORY_REMEMBER, remember(idempotency_key="k1", content="Something else."))
    no_key = [await rpc(subjects.MEMORY_REMEMBER, remember()) for _ in range(2)]

    assert (first["created"], again["created"], again["memory_id"]) == (True, False, first["memory_id"])
    assert code(other) == "bad_request"
    assert "idempotency_key" in other["error"]["message"]
    assert no_key[0]["memory_id"] != no_key[1]["memory_id"]
    assert len(published(d).of_type("memory.remembered")) == 3


async def test_updates_make_versions_guarded_by_expected_version_and_history_lists_them(api):
    rpc, _, memories = api
    mid = (await rpc(subjects.MEMORY_REMEMBER, remember()))["memory_id"]
    owner = {"tenant_id": T, "user_id": U1, "memory_id": mid}

    moved = await rpc(
        subjects.MEMORY_UPDATE, {**owner, "content": "Ana moved the letter to the bell tower.", "expected_version": 1}
    )
    stale = await rpc(subjects.MEMORY_UPDATE, {**owner, "content": "Lost update.", "expected_version": 1})
    same = await rpc(subjects.MEMORY_UPDATE, {**owner, "content": "Ana moved the letter to the bell tower."})
    retyped = await rpc(subjects.MEMORY_UPDATE, {**owner, "type": "semantic", "tags": ["letter"]})
    history = await rpc(subjects.MEMORY_HISTORY, owner)

    assert (moved["version"], moved["changed"]) == (2, True)
    assert code(stale) == "conflict"
    assert (same["version"], same["changed"]) == (2, False)
    assert retyped["version"] == 3
    assert [v["change"] for v in history["versions"]] == ["remembered", "updated", "updated"]
    assert history["bot_id"] is None, "for whoever sees the namespace"
    assert history["versions"][1]["content"] == "Ana moved the letter to the bell tower."
    assert history["versions"][1]["title"] == "Ana moved the letter to the bell tower", "a derived title follows"
    [row] = await memories.by_ids(T, [mid])
    assert (row.version, row.memory_type, row.tags) == (3, "semantic", ("letter",))


async def test_forget_removes_the_row_keeps_the_record_and_redacts_the_history(api):
    rpc, d, memories = api
    mid = (await rpc(subjects.MEMORY_REMEMBER, remember()))["memory_id"]
    owner = {"tenant_id": T, "user_id": U1, "memory_id": mid}

    gone = await rpc(subjects.MEMORY_FORGET, {**owner, "reason": "asked"})
    again = await rpc(subjects.MEMORY_FORGET, owner)
    history = await rpc(subjects.MEMORY_HISTORY, owner)
    update = await rpc(subjects.MEMORY_UPDATE, {**owner, "content": "back?"})

    assert (gone["forgotten"], again["forgotten"]) == (True, False)
    assert await memories.by_ids(T, [mid]) == []
    assert history["forgotten"] is True
    assert [v["change"] for v in history["versions"]] == ["remembered", "forgotten"]
    assert all(v.get("content") is None and v.get("title") is None for v in history["versions"])
    assert history["versions"][1]["reason"] == "asked"
    assert code(update) == "not_found"
    assert len(published(d).of_type("memory.forgotten")) == 1


async def test_another_players_memory_looks_unknown_and_a_shared_one_needs_the_engine_right(api):
    rpc, _, _ = api
    mine = (await rpc(subjects.MEMORY_REMEMBER, remember()))["memory_id"]
    shared = (await rpc(subjects.MEMORY_ENGINE_REMEMBER, remember(owner_namespace="campaign:kestrel", bot_id="bard")))[
        "memory_id"
    ]

    for subject in (subjects.MEMORY_HISTORY, subjects.MEMORY_FORGET, subjects.MEMORY_ENGINE_FORGET):
        assert code(await rpc(subject, {"tenant_id": T, "user_id": U2, "memory_id": mine})) == "not_found"
    assert (
        code(await rpc(subjects.MEMORY_HISTORY, {"tenant_id": "t2", "user_id": U1, "memory_id": mine})) == "not_found"
    )
    on_plain = await rpc(subjects.MEMORY_UPDATE, {"tenant_id": T, "user_id": U2, "memory_id": shared, "content": "x"})
    on_engine = await rpc(
        subjects.MEMORY_ENGINE_UPDATE, {"tenant_id": T, "user_id": U2, "memory_id": shared, "content": "x"}
    )
    assert code(on_plain) == "forbidden"
    assert on_engine["changed"] is True
    history = await rpc(subjects.MEMORY_ENGINE_HISTORY, {"tenant_id": T, "user_id": U2, "memory_id": shared})
    assert [v["by_user_id"] for v in history["versions"]] == [U1, U2]
    assert (history["user_id"], history["bot_id"]) == (U1, "bard"), "the owner and the character, as remembered"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (remember(owner_namespace="guild:g1"), "namespace"),
        (remember(type="gossip"), "type"),
        (remember(content=""), "content"),
        (remember(assets=[{"uri": "not a uri", "media_type": "audio/ogg"}]), "uri"),
        (remember(assets=[{"uri": "https://x/a", "media_type": "ogg"}]), "media type"),
        (remember(owner_namespace="character:bard", bot_id="elise"), "character"),
        ({"tenant_id": T, "user_id": U1, "memory_id": "m", "whatever": 1}, "whatever"),
        (b"not json", "<body>"),
    ],
)
async def test_bad_input_gets_a_bad_request_saying_what_is_wrong(api, body, says):
    rpc, _, _ = api
    subject = (
        subjects.MEMORY_ENGINE_REMEMBER
        if isinstance(body, dict) and "owner_namespace" in body
        else subjects.MEMORY_UPDATE
    )
    reply = await rpc(subject, body)
    assert code(reply) == "bad_request"
    assert says in reply["error"]["message"]
