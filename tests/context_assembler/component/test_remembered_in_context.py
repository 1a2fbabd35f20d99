"""Memories written through the memory API in ``mnemo.rpc.context.assemble.v1`` (issue 28): each in the section of
its type, its assets in ``sources``, within the budget, and only where the memory API's visibility rules let the
speaking bot see it: a seeded property over many tenants, players, characters and campaigns finds no leak."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mnemo.shared import subjects
from tests.context_assembler.component.memory_world import World, world

__all__ = ["world"]  # the fixture


def section(reply: dict[str, Any], name: str) -> str:
    return next((s["text"] for s in reply["sections"] if s["name"] == name), "")


def remembered(reply: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in reply["sources"] if s.get("exact_kind") == "memory"}


async def test_each_type_goes_to_its_section_with_its_assets_and_why(world: World) -> None:
    asset = {"uri": "https://cdn.example/hymn.ogg", "media_type": "audio/ogg", "title": "The choir's hymn"}
    episodic = await world.remember("u1", "Ana hid the envoy's letter under the chapel's loose stone.",
                                    assets=[asset])  # fmt: skip
    semantic = await world.remember("u1", "The envoy's letter is sealed with blue wax.", type="semantic")
    rule = await world.remember("gm", "Opening a sealed letter of the envoy costs one point of honour.",
                                engine=True, owner_namespace="campaign:kestrel", type="procedural")  # fmt: skip

    reply = await world.context("u1", "What happened to the envoy's letter?", campaign_id="kestrel")
    sources = remembered(reply)
    assert set(sources) == {episodic, semantic, rule}
    assert "chapel's loose stone" in section(reply, "memories")
    assert "blue wax" in section(reply, "knowledge")
    assert "point of honour" in section(reply, "lore")
    assert sources[episodic]["assets"] == [asset]
    assert sources[rule]["detail"] == "procedural memory of campaign:kestrel, remembered by gm"
    assert all(0 < s["score"] <= 1 for s in sources.values())
    # Without the campaign named, its memory stays out.
    assert rule not in remembered(await world.context("u1", "What happened to the envoy's letter?"))


async def test_a_character_memory_reaches_only_that_bot_and_the_budget_holds(world: World) -> None:
    secret = await world.remember("gm", "The bard secretly works for the smugglers of the old mill.", engine=True,
                                  owner_namespace="character:bard")  # fmt: skip
    for_envoy = await world.remember("u1", "Only the envoy knows the smugglers meet at the old mill.", bot_id="envoy")

    as_bard = remembered(await world.context("u1", "Who works for the smugglers at the old mill?", bot="bard"))
    as_envoy = remembered(await world.context("u1", "Who works for the smugglers at the old mill?", bot="envoy"))
    assert secret in as_bard
    assert for_envoy not in as_bard
    assert for_envoy in as_envoy
    assert secret not in as_envoy

    for i in range(8):
        await world.remember("u1", f"Smugglers story {i}: the old mill hides crates of wine, salt and rope {i}.")
    small = await world.context("u1", "What do the smugglers hide at the old mill?", max_tokens=120)
    assert small["token_count"] <= 120
    large = await world.context("u1", "What do the smugglers hide at the old mill?", max_tokens=4000)
    assert 0 < len(remembered(small)) < len(remembered(large))


async def test_a_forgotten_memory_leaves_the_context(world: World) -> None:
    mid = await world.remember("u1", "The lighthouse key is in Maren's boot.")
    assert mid in remembered(await world.context("u1", "Where is the lighthouse key?"))
    await world.rpc(subjects.MEMORY_FORGET, {"tenant_id": "t1", "user_id": "u1", "memory_id": mid})
    await world.index_events()
    reply = await world.context("u1", "Where is the lighthouse key?")
    assert mid not in remembered(reply)
    assert "Maren's boot" not in reply["context"]


WORDS = ("letter", "chapel", "smugglers", "reef", "lighthouse", "envoy", "crowns", "mill", "harbour", "key")


async def test_random_tenants_players_characters_and_campaigns_leak_nothing_into_contexts(world: World) -> None:
    """Property (seeded, many draws): every memory a context shows, in its sources or anywhere in its text, is one
    its user may see as the speaking bot in the request's campaign; checked by an oracle independent of mnemo."""
    rng = random.Random(20261127)
    tenants, users, bots, camps = ("t1", "t2", "t3"), ("u1", "u2", "u3", "gm"), ("bard", "envoy", "odo"), ("k1", "k2")
    written: dict[str, tuple[str, str, str | None, str]] = {}  # id -> (tenant, namespace, character, marker)
    for n in range(60):
        tenant, user = rng.choice(tenants), rng.choice(users)
        namespace = rng.choice([f"player:{user}", f"campaign:{rng.choice(camps)}", f"character:{rng.choice(bots)}"])
        bot = rng.choice([None, None, rng.choice(bots)])
        if namespace.startswith("character:"):
            bot = rng.choice([None, namespace.split(":", 1)[1]])
        marker = f"zq{n:03d}x"  # a word only this memory holds: found in the text if it leaks anywhere
        kind = rng.choice(("episodic", "semantic", "declarative", "procedural"))
        body = {"tenant_id": tenant, "user_id": user, "owner_namespace": namespace, "type": kind, "bot_id": bot,
                "content": f"Memory {marker}: the {' '.join(rng.sample(WORDS, 3))}."}  # fmt: skip
        reply = await world.rpc(subjects.MEMORY_ENGINE_REMEMBER, body)
        assert "memory_id" in reply, (body, reply)
        written[reply["memory_id"]] = (tenant, namespace, bot, marker)
    await world.index_events()

    def visible(tenant: str, user: str, bot: str, campaign: str | None, memory_id: str) -> bool:
        m_tenant, namespace, m_bot, _ = written[memory_id]
        kind, owner = namespace.split(":", 1)
        if m_tenant != tenant or m_bot not in (None, bot):
            return False
        return owner == {"player": user, "campaign": campaign, "character": bot}[kind]

    shown = 0
    for _ in range(90):
        tenant, user, bot = rng.choice(tenants), rng.choice(users), rng.choice(bots)
        campaign = rng.choice([None, *camps])
        reply = await world.context(user, " ".join(rng.sample(WORDS, 3)), bot=bot, tenant_id=tenant,
                                    campaign_id=campaign, max_tokens=rng.choice([200, 800, 4000]))  # fmt: skip
        ids = set(remembered(reply))
        assert ids <= set(written)
        leaks = [written[i] for i in ids if not visible(tenant, user, bot, campaign, i)]
        leaks += [
            w for i, w in written.items() if w[3] in reply["context"] and not visible(tenant, user, bot, campaign, i)
        ]
        assert leaks == [], (tenant, user, bot, campaign, leaks)
        shown += len(ids)
    assert shown > 60, "the contexts showed remembered memories (the property is not vacuous)"


async def test_recency_is_the_same_lever_in_context_as_in_search(world: World) -> None:
    """A context's ``recency_half_life_days`` multiplies a memory's cosine by the search's recency factor: a memory
    200 days old with a 30-day half-life keeps 0.5 + 0.5 * 0.5 ** (200 / 30) of its score, a new one all of it."""
    old_at = datetime.now(UTC) - timedelta(days=200)
    old = await world.remember("u1", "Maren keeps the lighthouse key in her boot.", occurred_at=old_at.isoformat())
    new = await world.remember("u1", "Maren keeps the lighthouse key in her coat.")
    question = "Where does Maren keep the lighthouse key?"

    flat = remembered(await world.context("u1", question, recency_half_life_days=0))
    recent = remembered(await world.context("u1", question, recency_half_life_days=30))
    assert recent[old]["score"] / flat[old]["score"] == pytest.approx(0.5 + 0.5 * 0.5 ** (200 / 30), abs=0.01)
    assert recent[new]["score"] / flat[new]["score"] == pytest.approx(1.0, abs=0.01)
    assert recent[new]["score"] > recent[old]["score"]
    searched = await world.search("u1", question, recency_half_life_days=30)
    parts = {h["id"]: h["score_parts"]["recency"] for h in searched["results"]}
    assert parts[old] == pytest.approx(recent[old]["score"] / flat[old]["score"], abs=0.01)


async def test_the_knowledge_directive_is_on_by_default_and_off_per_request(world: World) -> None:
    on = await world.context("u1", "Who are you?", bot="odo")
    assert "odo's response MUST be consistent with what odo knows" in section(on, "directive")
    off = await world.context("u1", "Who are you?", bot="odo", knowledge_directive=False)
    assert "directive" not in [s["name"] for s in off["sections"]]
