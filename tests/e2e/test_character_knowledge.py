"""Per-character knowledge as a security property, through the public contract only (no hive mind).

A 120-message scene with three bots: one leaves halfway and a secret is told while it is away. The absent
bot's context must never contain the secret (not in history, retrieved messages, memories or knowledge),
the others' must. Then many random scenes (tenants, users, bots and who is present drawn at random, ids
reused across tenants and users) with a secret per stretch of the scene: no bot's context ever holds a
secret told while it was away, or one of another scene. Random with fixed seeds so a failure reproduces.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import nats
import pytest

from tests.e2e.subjects import ASSEMBLE, CREATED, MEMORY_LIST
from tests.waiting import wait_for_stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

T0 = datetime(2026, 10, 1, tzinfo=UTC)
SMALL_TALK = [
    "The caravan rolled on through the red canyon while the wind picked up.",
    "We should water the horses before the next ridge.",
    "Did anyone else hear the bells from the monastery last night?",
    "The stew tonight needs more salt, honestly.",
    "Look at the hawks circling over the dry riverbed.",
    "My boots are falling apart after all this walking.",
    "Tell me again how far it is to the coast.",
    "I think the map is older than it looks.",
]


@dataclass
class Scene:
    tenant: str
    user: str
    conversation: str
    bots: list[str]
    persona: str = "hero"
    messages: list[dict[str, Any]] = field(default_factory=list)
    # secret word -> the bots present when it was told
    secrets: dict[str, frozenset[str]] = field(default_factory=dict)

    def add(self, present: list[str], text: str, rng: random.Random) -> None:
        i = len(self.messages)
        speaker = rng.choice([*present, self.persona]) if present else self.persona
        user_turn = speaker == self.persona
        self.messages.append(
            {
                "tenant_id": self.tenant,
                "user_id": self.user,
                "conversation_id": self.conversation,
                "message_id": f"m-{i}",
                "role": "user" if user_turn else "assistant",
                "author_id": speaker,
                "author_name": speaker.capitalize(),
                "content": text,
                "created_at": (T0 + timedelta(minutes=i)).isoformat(),
                "bot_ids": list(present),
                "persona_id": self.persona,
            }
        )

    def tell_secret(self, present: list[str], word: str, rng: random.Random) -> None:
        self.add(present, f"Listen closely. The secret is that the crown lies under the {word} stone.", rng)
        self.secrets[word] = frozenset(present)


async def ask(nc: nats.NATS, scene: Scene, bot: str, question: str, max_tokens: int = 6000) -> dict[str, Any]:
    body = {
        "tenant_id": scene.tenant,
        "user_id": scene.user,
        "conversation_id": scene.conversation,
        "bot_id": bot,
        "persona_id": scene.persona,
        "user_message": question,
        "max_tokens": max_tokens,
    }
    reply: dict[str, Any] = json.loads((await nc.request(ASSEMBLE, json.dumps(body).encode(), timeout=20)).data)
    assert "error" not in reply, reply
    return reply


async def list_memories(nc: nats.NATS, scene: Scene) -> list[dict[str, Any]]:
    body = {"tenant_id": scene.tenant, "user_id": scene.user, "source": "all", "limit": 200}
    reply: dict[str, Any] = json.loads((await nc.request(MEMORY_LIST, json.dumps(body).encode(), timeout=20)).data)
    assert "error" not in reply, reply
    items: list[dict[str, Any]] = reply["items"]
    return items


async def publish(nc: nats.NATS, scenes: list[Scene]) -> None:
    js = nc.jetstream()
    for scene in scenes:
        for msg in scene.messages:
            await js.publish(CREATED, json.dumps(msg).encode())


def secret_sources(reply: dict[str, Any], secret_ids: set[str]) -> list[dict[str, Any]]:
    """Sources that come from these messages (a message itself, or a summary/fact derived from it)."""
    return [s for s in reply["sources"] if secret_ids & {s["id"], *s.get("message_ids", [])}]


def three_bot_scene() -> Scene:
    """120 messages: mira, oren and tavi; tavi leaves for messages 40-79, the secret is message 50."""
    rng = random.Random(7)
    scene = Scene("tenant-a", "user-a", "camp-1", ["mira", "oren", "tavi"])
    for i in range(120):
        present = ["mira", "oren"] if 40 <= i < 80 else ["mira", "oren", "tavi"]
        if i == 50:
            scene.tell_secret(present, "obsidian", rng)
        else:
            scene.add(present, SMALL_TALK[i % len(SMALL_TALK)], rng)
    return scene


async def test_a_bot_away_when_a_secret_is_told_never_learns_it(stack: Any) -> None:
    scene = three_bot_scene()
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        await publish(nc, [scene])

        async def all_messages_recorded() -> bool:
            reply = await ask(nc, scene, "tavi", "")
            return "m-119" in {s["id"] for s in reply["sources"]}

        async def summaries_and_facts_made() -> bool:
            items = await list_memories(nc, scene)
            summaries = [i for i in items if i["source"] == "memory"]
            facts = [i for i in items if i["source"] == "knowledge"]
            return len(summaries) >= 6 and len(facts) >= 2

        await wait_for_stack(all_messages_recorded, "the whole scene to be recorded")
        await wait_for_stack(summaries_and_facts_made, "the summaries up to message 104 and the facts of the secret")

        for bot in ("mira", "oren"):
            reply = await ask(nc, scene, bot, "What is the secret about the crown?")
            assert "obsidian" in reply["context"], (bot, reply["sections"])
        oren = await ask(nc, scene, "oren", "What is the secret about the crown?")
        knows = next(s["text"] for s in oren["sections"] if s["name"] == "knowledge")
        assert knows.startswith("What oren knows:")
        assert "obsidian" in knows, "a witness learned it as a fact"

        away = {f"m-{i}" for i in range(40, 80)}
        questions = ["What is the secret about the crown?", "obsidian stone", "Where does the crown lie?", ""]
        for question in questions:
            for max_tokens in (600, 6000, 60000):
                reply = await ask(nc, scene, "tavi", question, max_tokens)
                assert "obsidian" not in reply["context"].lower(), (question, reply["sections"])
                assert not secret_sources(reply, away), "tavi is shown nothing said while it was away"
                assert "knowledge" not in {s["name"] for s in reply["sections"]}, "tavi learned no fact"

        # Summaries tavi was absent for: a query made of their own words finds them for mira, never for tavi.
        without_tavi = [
            i for i in await list_memories(nc, scene) if i["source"] == "memory" and "tavi" not in i["participants"]
        ]
        assert without_tavi, "the stretch without tavi was summarized"
        for memory in without_tavi:
            mira = await ask(nc, scene, "mira", memory["text"], 60000)
            assert memory["id"] in {s["id"] for s in mira["sources"]}, "the query does find the summary"
            tavi = await ask(nc, scene, "tavi", memory["text"], 60000)
            assert memory["id"] not in {s["id"] for s in tavi["sources"]}, memory
        # Tavi still remembers what it witnessed: the scene before it left is served.
        reply = await ask(nc, scene, "tavi", "", 60000)
        assert "m-119" in {s["id"] for s in reply["sources"]}
    finally:
        await nc.drain()


def random_scenes(seed: int, count: int) -> list[Scene]:
    """Scenes whose tenants, users, conversations and bot ids collide; presence changes every 6 messages."""
    rng = random.Random(seed)
    bots = ["mira", "oren", "tavi", "ysolde"]
    scenes: list[Scene] = []
    used: set[tuple[str, str]] = set()
    words = iter(rng.sample(["amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo",
                             "jasper", "kelp", "lagoon", "marble", "nectar", "onyx", "pebble", "quartz", "raven",
                             "saffron", "tundra", "umber", "violet", "willow", "xenon", "yarrow", "zinc", "agate",
                             "birch", "cedar", "delta", "elm", "flint", "gravel", "hazel", "iris", "juniper"], 36))  # fmt: skip
    while len(scenes) < count:
        tenant, user = f"t-{rng.randint(0, 2)}", f"u-{rng.randint(0, 1)}"
        if (tenant, user) in used:
            continue
        used.add((tenant, user))
        cast = rng.sample(bots, 3)
        scene = Scene(tenant, user, "conv", cast)
        for stretch in range(5):
            present = sorted(rng.sample(cast, rng.randint(1, 3)))
            for i in range(6):
                if i == 2 and stretch < 4:
                    scene.tell_secret(present, next(words), rng)
                else:
                    scene.add(present, SMALL_TALK[(stretch + i) % len(SMALL_TALK)], rng)
        scenes.append(scene)
    return scenes


async def test_random_scenes_leak_nothing_across_characters_users_and_tenants(stack: Any) -> None:
    scenes = random_scenes(seed=20261122, count=6)
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        await publish(nc, scenes)
        for scene in scenes:
            last = scene.messages[-1]["message_id"]
            last_present = scene.messages[-1]["bot_ids"][0]

            async def recorded(scene: Scene = scene, bot: str = last_present, last: str = last) -> bool:
                reply = await ask(nc, scene, bot, "")
                return last in {s["id"] for s in reply["sources"]}

            await wait_for_stack(recorded, f"{scene.tenant}/{scene.user} to be recorded")
            for word, present in scene.secrets.items():
                witness = sorted(present)[0]

                async def witness_finds_it(scene: Scene = scene, bot: str = witness, word: str = word) -> bool:
                    reply = await ask(nc, scene, bot, f"What is the secret about the {word} stone?")
                    return word in reply["context"]

                await wait_for_stack(witness_finds_it, f"{witness} to find the secret {word}")

            async def facts_made(scene: Scene = scene) -> bool:
                facts = " ".join(i["text"] for i in await list_memories(nc, scene) if i["source"] == "knowledge")
                return all(word in facts for word in scene.secrets)

            await wait_for_stack(facts_made, f"the facts of {scene.tenant}/{scene.user}'s secrets")

        every_secret = {w: (s, p) for s in scenes for w, p in s.secrets.items()}
        probes = 0
        for scene in scenes:
            for bot in scene.bots:
                for word, (owner, present) in every_secret.items():
                    reply = await ask(nc, scene, bot, f"What is the secret about the {word} stone?")
                    probes += 1
                    may_know = owner is scene and bot in present
                    if not may_know:
                        assert word not in reply["context"], (scene.tenant, scene.user, bot, word, reply["sections"])
        assert probes == sum(len(s.bots) for s in scenes) * len(every_secret)
    finally:
        await nc.drain()
