"""``mnemo.rpc.memory.search.v1`` on the whole write path without servers: the memory service (in-memory log and
read model) remembers, the embedding service indexes what it published into Qdrant Edge (the real engine, in
process) with the bundled model, and the context-assembler searches. Visibility, filters, the score's parts,
recency and near-duplicates, as a client sees them."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from mnemo.shared import subjects
from tests.context_assembler.component.memory_world import T, World, world

__all__ = ["world"]  # the fixture
NOW = datetime.now(UTC)

LETTER = "Ana hid the envoy's letter under the chapel's loose stone."


async def test_a_players_secret_is_found_by_them_and_never_by_another_player(world: World) -> None:
    secret = await world.remember("u1", LETTER)
    await world.remember("u2", "The harbour master drinks at the Gull every night.")

    assert secret in await world.found("u1", "where is the letter hidden?")
    assert secret not in await world.found("u2", "where is the letter hidden?")
    refused = await world.search("u2", "letter", namespaces=["player:u1"])
    assert refused["error"]["code"] == "forbidden"


async def test_campaign_memories_when_named_and_character_memories_only_as_that_character(world: World) -> None:
    camp = await world.remember("gm", "The Kestrel crew owes the smugglers forty crowns.", engine=True,
                                owner_namespace="campaign:kestrel")  # fmt: skip
    bard = await world.remember("gm", "The bard secretly works for the smugglers.", engine=True,
                                owner_namespace="character:bard")  # fmt: skip
    npc = await world.remember("gm", "The smugglers meet the envoy at the old mill.", engine=True,
                               owner_namespace="campaign:kestrel", bot_id="envoy")  # fmt: skip

    assert camp not in await world.found("u1", "smugglers")
    as_player = await world.found("u1", "smugglers", namespaces=["player:u1", "campaign:kestrel"])
    assert camp in as_player
    assert bard not in as_player
    assert npc not in as_player
    as_bard = await world.found(
        "u1", "smugglers", bot_id="bard", namespaces=["player:u1", "campaign:kestrel", "character:bard"]
    )
    assert {camp, bard} <= set(as_bard)
    assert npc not in as_bard
    as_envoy = await world.found("u1", "smugglers", bot_id="envoy", namespaces=["campaign:kestrel"])
    assert set(as_envoy) == {camp, npc}
    assert (await world.search("u1", "x", namespaces=["character:bard"]))["error"]["code"] == "forbidden"


async def test_filters_on_type_tags_and_time(world: World) -> None:
    old = await world.remember("u1", "The reef glows at night.", type="semantic", tags=["place:reef", "lore"],
                               occurred_at=(NOW - timedelta(days=30)).isoformat())  # fmt: skip
    new = await world.remember("u1", "We sailed over the glowing reef.", tags=["place:reef"])

    assert set(await world.found("u1", "reef")) == {old, new}
    assert await world.found("u1", "reef", types=["semantic"]) == [old]
    assert await world.found("u1", "reef", tags=["lore", "place:reef"], tags_match="all") == [old]
    assert set(await world.found("u1", "reef", tags=["lore", "place:reef"])) == {old, new}
    assert await world.found("u1", "reef", since=(NOW - timedelta(days=1)).isoformat()) == [new]
    assert await world.found("u1", "reef", until=(NOW - timedelta(days=1)).isoformat()) == [old]


async def test_every_result_carries_its_parts_and_recency_orders_like_memories(world: World) -> None:
    old = await world.remember("u1", "Maren keeps the lighthouse key in her boot.",
                               occurred_at=(NOW - timedelta(days=200)).isoformat())  # fmt: skip
    new = await world.remember("u1", "Maren keeps the lighthouse key in her coat.")

    reply = await world.search("u1", "where does Maren keep the lighthouse key?", recency_half_life_days=30)
    hits = {hit["id"]: hit for hit in reply["results"]}
    assert list(hits)[:2] == [new, old]
    for hit in hits.values():
        parts = hit["score_parts"]
        assert 0 < parts["dense"] <= 1
        assert 0 < parts["lexical"] <= 1
        assert 0 < parts["recency"] <= 1
        assert hit["origin"] == "remembered by u1"
        assert hit["source"] == "memory"
    assert hits[old]["score_parts"]["recency"] < 0.6 < hits[new]["score_parts"]["recency"]
    off = await world.search("u1", "where does Maren keep the lighthouse key?", recency_half_life_days=0)
    assert {hit["score_parts"]["recency"] for hit in off["results"]} == {1.0}


async def test_near_duplicates_are_left_out_and_a_forgotten_memory_is_gone(world: World) -> None:
    first = await world.remember("u1", LETTER)
    await world.remember("u1", LETTER + " ")
    other = await world.remember("u1", "The letter is sealed with blue wax.")

    found = await world.found("u1", "the envoy's letter")
    assert len([i for i in found if i != other]) == 1
    await world.rpc(subjects.MEMORY_FORGET, {"tenant_id": T, "user_id": "u1", "memory_id": first})
    await world.index_events()
    assert first not in await world.found("u1", "the envoy's letter")


async def test_an_empty_query_lists_the_newest_first_with_assets(world: World) -> None:
    asset = {"uri": "https://cdn.example/map.png", "media_type": "image/png"}
    a = await world.remember("u1", "First entry.", occurred_at=(NOW - timedelta(days=2)).isoformat())
    b = await world.remember("u1", "Second entry.", assets=[asset])

    reply = await world.search("u1", "")
    assert [h["id"] for h in reply["results"]] == [b, a]
    assert reply["results"][0]["assets"] == [{**asset, "title": None}]


WORDS = ("letter", "chapel", "smugglers", "reef", "lighthouse", "envoy", "crowns", "mill", "harbour", "key")


async def test_random_tenants_players_characters_and_campaigns_never_see_what_is_not_theirs(world: World) -> None:
    """Property (seeded, many draws): whatever a search asks, every result is one its caller may see by the rules
    of docs/memory-api.md, checked against the written memories by an oracle independent of mnemo's code."""
    rng = random.Random(20261126)
    tenants, users, bots, camps = ("t1", "t2", "t3"), ("u1", "u2", "u3", "gm"), ("bard", "envoy", "odo"), ("k1", "k2")
    written: dict[str, tuple[str, str, str | None]] = {}  # memory id -> (tenant, namespace, character)
    for n in range(60):
        tenant, user = rng.choice(tenants), rng.choice(users)
        namespace = rng.choice([f"player:{user}", f"campaign:{rng.choice(camps)}", f"character:{rng.choice(bots)}"])
        bot = rng.choice([None, None, rng.choice(bots)])
        if namespace.startswith("character:"):
            bot = rng.choice([None, namespace.split(":", 1)[1]])  # a character's memory is that character's
        words = " ".join(rng.sample(WORDS, 3))
        body = {"tenant_id": tenant, "user_id": user, "owner_namespace": namespace, "type": "episodic",
                "content": f"Memory {n} of {tenant}: the {words}.", "bot_id": bot}  # fmt: skip
        reply = await world.rpc(subjects.MEMORY_ENGINE_REMEMBER, body)
        assert "memory_id" in reply, (body, reply)
        written[reply["memory_id"]] = (tenant, namespace, bot)
    await world.index_events()

    def visible(tenant: str, user: str, bot: str | None, named: set[str], memory_id: str) -> bool:
        m_tenant, namespace, m_bot = written[memory_id]
        kind, owner = namespace.split(":", 1)
        for_me = m_bot is None or (bot is not None and m_bot == bot) or (kind == "player" and bot is None)
        if m_tenant != tenant or not for_me:
            return False
        if kind == "player":
            return owner == user
        if kind == "campaign":
            return namespace in named
        return owner == bot

    seen = 0
    for _ in range(120):
        tenant, user, bot = rng.choice(tenants), rng.choice(users), rng.choice([None, *bots])
        named = {f"player:{user}", *(f"campaign:{c}" for c in camps if rng.random() < 0.5)}
        if bot is not None and rng.random() < 0.7:
            named.add(f"character:{bot}")
        asked = {"bot_id": bot, "limit": 50, "namespaces": sorted(named)} if rng.random() < 0.8 else {"bot_id": bot}
        reply = await world.search(user, " ".join(rng.sample(WORDS, 2)), tenant_id=tenant, **asked)
        assert "results" in reply, reply
        names = set(asked.get("namespaces", ()))
        leaks = [h["id"] for h in reply["results"] if not visible(tenant, user, bot, names, h["id"])]
        assert leaks == [], (tenant, user, bot, names, [written[i] for i in leaks])
        seen += len(reply["results"])
        other = rng.choice([u for u in users if u != user])
        refused = await world.search(user, "letter", tenant_id=tenant, namespaces=[f"player:{other}"])
        assert refused["error"]["code"] == "forbidden"
    assert seen > 100, "the searches found something (the property is not vacuous)"


async def test_no_namespace_named_finds_nothing_as_a_player_or_as_a_character(world: World) -> None:
    """An empty ``namespaces`` list asks for nothing: an empty answer, also with a ``bot_id`` (it was an internal
    error: the character's fact filter was built with no scope; found by the gateway's schemathesis run)."""
    await world.remember("u1", LETTER)
    for query in ("", "letter"):
        assert await world.found("u1", query, namespaces=[]) == []
        assert await world.found("u1", query, namespaces=[], bot_id="bard") == []


async def test_a_blank_user_id_searches_its_own_empty_namespace_without_error(world: World) -> None:
    await world.remember("u1", LETTER)
    reply = await world.search(" ", "\U000a6eb5 where is the letter?", since="6630-10-25T14:18:27Z", limit=56)
    assert reply.get("results") == [], reply
