"""The memory API's isolation as a security property, on the whole embedded stack over NATS, through the public
contract only (plain nats-py and JSON; the rule: docs/memory-api.md, "Who sees a memory").

Random tenants, players, characters and campaigns, their ids reused across tenants, write memories in random
namespaces (`player:<id>`, `campaign:<id>`, `character:<bot>`), each for everyone there or for one character,
each holding a word no other memory holds. Then, checked by an oracle written from the docs (not mnemo's code):

- every memory reaches whoever may see it: its search, and the context of its player, of every member of its
  campaign, of its character;
- random contexts and searches (asking for a random memory's own words) show only memories their caller may
  see, in their sources, results or anywhere in their text: zero leaks of another player's `player:` memory,
  an unnamed campaign's, another character's or another tenant's;
- a write to another player's namespace is `forbidden` (the engine's subject included), and so is a plain
  write to a campaign or a search naming another player's namespace; nothing refused shows up anywhere.

Every context reply is also read by a released client's models (tests/released/). Seeded, so a failure
reproduces. Size: `MNEMO_MEMORY_LEAK_SCALE` (default 1: 3 tenants, 40 memories, 60 random contexts and as many
searches, seconds to tens of seconds) multiplies memories, probes and refused writes and adds tenants and users;
`MNEMO_MEMORY_LEAK_SEED` draws another world; `make memory-leaks` runs scale 10.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import nats
import pytest

from tests.e2e.stackproc import StackProcess
from tests.released.context_v1 import parses_as_released

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SCALE = int(os.environ.get("MNEMO_MEMORY_LEAK_SCALE", "1"))
SEED = int(os.environ.get("MNEMO_MEMORY_LEAK_SEED", "20261126"))
REMEMBER, ENGINE_REMEMBER = "mnemo.rpc.memory.remember.v1", "mnemo.rpc.memory.engine.remember.v1"
SEARCH, ASSEMBLE = "mnemo.rpc.memory.search.v1", "mnemo.rpc.context.assemble.v1"
TENANTS = tuple(f"t-leak-{i}" for i in range(2 + SCALE))
USERS = tuple(f"u{i}" for i in range(3 + SCALE // 2))
BOTS, CAMPAIGNS = ("bard", "envoy", "odo"), ("kestrel", "marrow")
VOCAB = ("letter", "chapel", "smugglers", "reef", "lighthouse", "envoy", "crowns", "mill", "harbour", "key",
         "storm", "bell", "compass", "wax", "tower", "cellar", "raven", "ledger", "anchor", "lantern")  # fmt: skip
REACH_S = 90.0  # how long a memory may take to be indexed on a loaded machine


@dataclass(frozen=True)
class Memory:
    id: str
    tenant: str
    namespace: str
    bot: str | None  # the character who knows it; None: whoever sees the namespace
    content: str  # starts with a word only this memory holds

    @property
    def marker(self) -> str:
        return self.content.split()[0]


def visible(m: Memory, tenant: str, user: str, bot: str | None, campaigns: tuple[str, ...]) -> bool:
    """docs/memory-api.md, "Who sees a memory": one's own `player:` namespace, the campaigns named, one's own
    character's namespace; as a character only what is for everyone or for it; as no character, in a campaign,
    only what is for everyone."""
    kind, owner = m.namespace.split(":", 1)
    if m.tenant != tenant:
        return False
    if (kind, owner) not in {("player", user), *(("campaign", c) for c in campaigns), ("character", bot)}:
        return False
    if bot is not None:
        return m.bot in (None, bot)
    return kind == "player" or m.bot is None


class Mnemo:
    def __init__(self, nc: nats.NATS) -> None:
        self.nc = nc

    async def call(self, subject: str, body: dict[str, Any]) -> dict[str, Any]:
        reply: dict[str, Any] = json.loads((await self.nc.request(subject, json.dumps(body).encode(), timeout=30)).data)
        return reply

    async def context(self, tenant: str, user: str, bot: str, message: str, campaign: str | None) -> dict[str, Any]:
        body = {"tenant_id": tenant, "user_id": user, "conversation_id": "c-leak", "bot_id": bot,
                "user_message": message, "campaign_id": campaign, "max_tokens": 4000}  # fmt: skip
        reply = await self.call(ASSEMBLE, body)
        assert "sources" in reply, (body, reply)
        parses_as_released(reply)
        return reply

    async def search(self, tenant: str, user: str, query: str, **fields: Any) -> dict[str, Any]:
        return await self.call(SEARCH, {"tenant_id": tenant, "user_id": user, "query": query, "limit": 20, **fields})


def remembered(reply: dict[str, Any]) -> set[str]:
    return {s["id"] for s in reply["sources"] if s.get("exact_kind") == "memory"}


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = asyncio.get_running_loop().time() + REACH_S
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, what
        await asyncio.sleep(0.3)


async def write_world(mnemo: Mnemo, rng: random.Random) -> list[Memory]:
    written: list[Memory] = []
    for n in range(40 * SCALE):
        tenant, user = rng.choice(TENANTS), rng.choice(USERS)
        kind = rng.choice(("player", "player", "campaign", "character"))
        owner = {"player": user, "campaign": rng.choice(CAMPAIGNS), "character": rng.choice(BOTS)}[kind]
        bot = rng.choice([None, owner if kind == "character" else rng.choice(BOTS)])
        content = f"qz{n:04d}k: the {' '.join(rng.sample(VOCAB, 4))}."
        body = {"tenant_id": tenant, "user_id": user, "owner_namespace": f"{kind}:{owner}", "bot_id": bot,
                "type": rng.choice(("episodic", "semantic", "declarative", "procedural")), "content": content}  # fmt: skip
        reply = await mnemo.call(REMEMBER if kind == "player" else ENGINE_REMEMBER, body)
        assert reply.get("created") is True, (body, reply)
        written.append(Memory(reply["memory_id"], tenant, f"{kind}:{owner}", bot, content))
    return written


async def refuse_writes(mnemo: Mnemo, rng: random.Random) -> list[str]:
    """Writes that must be refused; the markers of what they tried to write (never to be seen anywhere)."""
    tried: list[str] = []
    for n in range(10 * SCALE):
        tenant, user, other = rng.choice(TENANTS), *rng.sample(USERS, 2)
        content = f"zr{n:04d}x: refused {' '.join(rng.sample(VOCAB, 3))}."
        base = {"tenant_id": tenant, "user_id": user, "type": "episodic", "content": content}
        for subject, namespace in ((REMEMBER, f"player:{other}"), (ENGINE_REMEMBER, f"player:{other}"),
                                   (REMEMBER, f"campaign:{rng.choice(CAMPAIGNS)}")):  # fmt: skip
            reply = await mnemo.call(subject, {**base, "owner_namespace": namespace})
            assert reply.get("error", {}).get("code") == "forbidden", (subject, namespace, reply)
        tried.append(content.split()[0])
    return tried


async def test_memories_reach_whoever_may_see_them_and_nobody_else(stack: StackProcess) -> None:
    rng = random.Random(SEED)
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    mnemo = Mnemo(nc)
    try:
        written = await write_world(mnemo, rng)
        never = await refuse_writes(mnemo, rng)
        members = {(t, c): rng.sample(USERS, 2) for t in TENANTS for c in CAMPAIGNS}

        for m in written:  # reach: its search and its contexts
            kind, owner = m.namespace.split(":", 1)
            searcher = owner if kind == "player" else rng.choice(USERS)
            as_bot = owner if kind == "character" else m.bot
            named = {"namespaces": [m.namespace]} if kind == "campaign" else {}

            async def found(m: Memory = m, user: str = searcher, bot: str | None = as_bot, named: Any = named) -> bool:
                reply = await mnemo.search(m.tenant, user, m.content, bot_id=bot, **named)
                assert "results" in reply, reply
                return m.id in [r["id"] for r in reply["results"]]

            await eventually(found, f"{m} is found by {searcher} as {as_bot}")
            readers = members[(m.tenant, owner)] if kind == "campaign" else [searcher]
            for user in readers:
                bot = as_bot or rng.choice(BOTS)
                campaign = owner if kind == "campaign" else None

                async def shown(
                    m: Memory = m, user: str = user, bot: str = bot, campaign: str | None = campaign
                ) -> bool:
                    return m.id in remembered(await mnemo.context(m.tenant, user, bot, m.content, campaign))

                await eventually(shown, f"{m} is in the context of {user} as {bot} in {campaign}")

        shown_total = 0
        for _ in range(60 * SCALE):  # leaks: random callers ask for random memories' own words
            tenant, user, bot = rng.choice(TENANTS), rng.choice(USERS), rng.choice(BOTS)
            target = rng.choice(written)
            campaign = rng.choice([None, *CAMPAIGNS])
            reply = await mnemo.context(tenant, user, bot, target.content, campaign)
            campaigns = (campaign,) if campaign else ()
            ids = remembered(reply)
            leaks = [m for m in written if m.id in ids and not visible(m, tenant, user, bot, campaigns)]
            leaks += [
                m for m in written if m.marker in reply["context"] and not visible(m, tenant, user, bot, campaigns)
            ]
            assert leaks == [], ("context", tenant, user, bot, campaign, leaks)
            assert not [w for w in never if w in json.dumps(reply)], "a refused write was kept"
            shown_total += len(ids)

            as_bot = rng.choice([None, bot])
            allowed = [
                f"player:{user}",
                *(f"campaign:{c}" for c in CAMPAIGNS),
                *([f"character:{as_bot}"] if as_bot else []),
            ]
            names = rng.choice([None, rng.sample(allowed, rng.randint(1, len(allowed)))])
            hits = await mnemo.search(tenant, user, target.content, bot_id=as_bot, namespaces=names)
            assert "results" in hits, hits
            searched = names or [f"player:{user}", *([f"character:{as_bot}"] if as_bot else [])]
            seen = tuple(n.split(":", 1)[1] for n in searched if n.startswith("campaign:"))
            ok = {m.id for m in written if m.namespace in searched and visible(m, tenant, user, as_bot, seen)}
            text = json.dumps(hits["results"])
            leaks = [m for m in written if (m.id in text or m.marker in text) and m.id not in ok]
            assert leaks == [], ("search", tenant, user, as_bot, names, leaks)
            assert not [w for w in never if w in text], "a refused write was kept"

            other = rng.choice([u for u in USERS if u != user])
            for refused in ([f"player:{other}"], [f"character:{rng.choice([b for b in BOTS if b != as_bot])}"]):
                reply = await mnemo.search(tenant, user, target.content, bot_id=as_bot, namespaces=refused)
                assert reply.get("error", {}).get("code") == "forbidden", (refused, reply)
        assert shown_total >= 20 * SCALE, "the contexts showed remembered memories (the property is not vacuous)"
        kinds = Counter(m.namespace.split(":")[0] for m in written)
        print(f"seed {SEED}, scale {SCALE}: {len(written)} memories {dict(kinds)}, {60 * SCALE} contexts showing "
              f"{shown_total} remembered memories and as many searches: no leak")  # fmt: skip
    finally:
        await nc.drain()
