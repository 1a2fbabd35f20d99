"""Facts in the hybrid search: knowledge events in the real log (SecantusDB), folded into the knowledge read
model and projected by the embedding handler into Qdrant Edge with the bundled model; the context-assembler's
gatherer then orders the bot's facts by relevance to the request. Retired facts leave the index, a promotion
moves a fact's point into the campaign's scope and back, and no search ever returns another tenant's, user's
or character's facts."""

from __future__ import annotations

import os
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from mnemo.services.context_assembler.gather.gathering import Gatherer
from mnemo.services.context_assembler.gather.reads import ReadModelReads
from mnemo.services.context_assembler.search.filters import facts_filter
from mnemo.services.context_assembler.settings import AssemblerSettings
from mnemo.services.embedding.app import chunk_strings
from mnemo.services.embedding.handlers import EmbeddingHandler
from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.eventlog.codec import EventCodec
from mnemo.shared.eventlog.mongo import MongoEventStore
from mnemo.shared.events.envelope import NewEvent
from mnemo.shared.events.recorded import (
    REGISTRY,
    FactLearned,
    FactPromoted,
    FactRetired,
    FactUnpromoted,
    character_scope,
    knowledge_stream,
    new_event,
    player_scope,
)
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.readmodels.catalog import MongoReadModelPorts, ensure_indexes
from mnemo.shared.readmodels.knowledge import KnowledgeReadModel
from mnemo.shared.vectors.edge import EdgeVectorIndex
from mnemo.shared.vectors.points import point_id
from mnemo.shared.vectors.port import Match, VectorFilter, VectorQuery
from mnemo_client.wire.contract import ContextAssembleRequest

pytestmark = pytest.mark.integration
T0 = datetime(2026, 3, 1, tzinfo=UTC)

ANA = [  # oldest first: without the search the cat would come last
    ("cat", "Ana keeps a grey cat named Pepper."),
    ("job", "Ana works night shifts as a nurse at the harbour clinic."),
    ("brother", "Ana's brother Luis plays the trumpet in a jazz band."),
    ("fear", "Ana is afraid of deep water since a boating accident."),
    ("tea", "Ana prefers green tea to coffee in the morning."),
]


@dataclass
class World:
    store: MongoEventStore
    knowledge: KnowledgeReadModel
    embedding: EmbeddingHandler
    index: EdgeVectorIndex
    reads: ReadModelReads
    embedder: BundledEmbedder
    versions: dict[str, int]

    async def append(self, tenant: str, bot: str, events: list[NewEvent]) -> None:
        """Append to the bot's knowledge stream, then fold into the read model and the index, as live."""
        stream = knowledge_stream(tenant, bot)
        result = await self.store.append(stream, self.versions.get(stream, 0), events)
        self.versions[stream] = result.version
        await self.knowledge.apply(result.committed)
        await self.embedding.project(result.committed)

    def gatherer(self, knowledge_limit: int = 20) -> Gatherer:
        settings = AssemblerSettings(
            memories_limit=0, retrieved_limit=0, legacy_limit=0, remembered_limit=0, knowledge_limit=knowledge_limit
        )
        return Gatherer(self.reads, self.index, self.embedder, settings)


@pytest.fixture
async def world(mongo_db: Any, tmp_path: Path) -> AsyncIterator[World]:
    cipher = FieldCipher(os.urandom(32), InMemoryKeyStore())
    store = MongoEventStore(mongo_db, EventCodec(REGISTRY, cipher))
    await store.ensure_indexes()
    knowledge = KnowledgeReadModel(mongo_db, cipher)
    await ensure_indexes(mongo_db)
    embedder = BundledEmbedder()
    index = EdgeVectorIndex(tmp_path, "vectors")
    await index.ensure_collection(embedder.dimensions)
    embedding = EmbeddingHandler(index, embedder, ReadModels(mongo_db, cipher), chunk_strings, knowledge=knowledge)
    yield World(
        store, knowledge, embedding, index, ReadModelReads.over(MongoReadModelPorts(mongo_db, cipher)), embedder, {}
    )
    await index.close()


def learned(
    tenant: str, fid: str, text: str, *, user: str = "u1", bot: str = "bard", scope: str | None = None, at: int = 0
) -> NewEvent:
    fact = FactLearned(
        fact_id=fid, character_id=bot, character_kind="bot", user_id=user, conversation_id="c1", text=text,
        subject=f"subject:{fid}", fact_type="semantic", confidence=0.9, learned_at=T0 + timedelta(minutes=at),
        scope=scope or player_scope(user), message_ids=[f"m-{fid}"], method="pattern",
    )  # fmt: skip
    return new_event(fact, tenant_id=tenant)


def rescoped(tenant: str, fid: str, owner: str, frm: str, to: str) -> NewEvent:
    promote = to.startswith("campaign:")
    change = (FactPromoted if promote else FactUnpromoted)(
        fact_id=fid, character_id="bard", owner_user_id=owner, by_user_id=owner, from_scope=frm, to_scope=to, at=T0
    )
    return new_event(change, tenant_id=tenant)


def request(question: str, *, tenant: str = "t1", user: str = "u1", bot: str = "bard", campaign: str | None = None):
    return ContextAssembleRequest(
        tenant_id=tenant, user_id=user, conversation_id="c1", bot_id=bot, user_message=question, campaign_id=campaign
    )


async def shown(world: World, req: ContextAssembleRequest, limit: int = 20) -> list[str]:
    gathered = await world.gatherer(limit).gather(req)
    assert "vector_index" not in gathered.degraded
    assert "embedder" not in gathered.degraded
    return [k.fact_id for k in gathered.knowledge]


def fact_points(fid: str) -> VectorFilter:
    return VectorFilter.where(tenant_id="t1", kind="fact").and_(Match("fact_id", (fid,)))


async def test_the_relevant_fact_comes_first_and_a_retired_one_leaves_the_index(world: World) -> None:
    await world.append("t1", "bard", [learned("t1", f"ana-{key}", text, at=i) for i, (key, text) in enumerate(ANA)])

    assert await shown(world, request("")) == [f"ana-{k}" for k, _ in reversed(ANA)], "no query: newest first"
    # The cat is the OLDEST fact: with three slots, the newest-first order would not show it at all.
    top = await shown(world, request("What is the name of Ana's cat?"), limit=3)
    assert top[0] == "ana-cat"
    assert len(top) == 3
    assert (await shown(world, request("Does Ana drink coffee or tea?")))[0] == "ana-tea"

    [point] = await world.index.retrieve([point_id("fact", "t1", "u1", "", "ana-cat", 0)])
    assert point.payload["audience"] == ["bard"]
    assert point.payload["scope"] == player_scope("u1")
    assert point.payload["user_id"] == "u1"

    retire = FactRetired(
        fact_id="ana-cat", character_id="bard", user_id="u1", reason="deleted", message_id="m-ana-cat", retired_at=T0
    )
    await world.append("t1", "bard", [new_event(retire, tenant_id="t1")])
    assert await world.index.count(fact_points("ana-cat")) == 0
    assert await world.index.count(fact_points("ana-tea")) == 1
    assert "ana-cat" not in await shown(world, request("What is the name of Ana's cat?"))

    # A late redelivery of the creation does not bring the retired fact back.
    [created] = [
        e
        for e in await world.store.read_stream(knowledge_stream("t1", "bard"))
        if e.payload.get("fact_id") == "ana-cat" and e.type == "knowledge.fact_learned"
    ]
    await world.embedding.project([created])
    assert await world.index.count(fact_points("ana-cat")) == 0


async def test_promotion_moves_the_point_into_the_campaign_and_back(world: World) -> None:
    key = "The lighthouse key hides under the blue stone by the pier."
    await world.append(
        "t1", "bard", [learned("t1", "key-u2", key, user="u2"), learned("t1", "tea-u1", ANA[4][1], at=1)]
    )
    question = "Where is the lighthouse key hidden?"
    in_campaign = request(question, campaign="k")

    assert await shown(world, in_campaign) == ["tea-u1"], "another user's private fact is never shown"
    await world.append("t1", "bard", [rescoped("t1", "key-u2", "u2", player_scope("u2"), "campaign:k")])
    assert await world.index.count(fact_points("key-u2").and_(Match("scope", ("campaign:k",)))) == 1
    assert await world.index.count(fact_points("key-u2")) == 1, "the point was rewritten, not duplicated"
    assert await shown(world, in_campaign) == ["key-u2", "tea-u1"], "promoted: found first, though older"
    assert await shown(world, request(question, campaign="other")) == ["tea-u1"]

    await world.append("t1", "bard", [rescoped("t1", "key-u2", "u2", "campaign:k", player_scope("u2"))])
    assert await world.index.count(fact_points("key-u2").and_(Match("scope", (player_scope("u2"),)))) == 1
    assert await shown(world, in_campaign) == ["tea-u1"]


async def test_no_search_returns_another_tenants_users_or_characters_facts(world: World) -> None:
    rnd = random.Random(5)
    tenants, users, bots = ("t1", "t2", "t3"), ("u1", "u2"), ("bard", "rook")
    texts = [text for _, text in ANA]
    truth: dict[str, tuple[str, str, str, str]] = {}  # fact id -> tenant, owner, bot, scope
    n = 0
    for tenant in tenants:
        for bot in bots:
            events = []
            for _ in range(rnd.randint(1, 5)):
                user = rnd.choice(users)
                scope = rnd.choice([player_scope(user), player_scope(user), character_scope(bot)])
                fid = f"f{n}"
                n += 1
                truth[fid] = (tenant, user, bot, scope)
                events.append(learned(tenant, fid, rnd.choice(texts), user=user, bot=bot, scope=scope, at=n))
            await world.append(tenant, bot, events)

    query = (await world.embedder.embed(["Ana's cat and her brother"]))[0]
    for tenant in tenants:
        for user in users:
            for bot in bots:
                req = request("Tell me about Ana's cat and her brother", tenant=tenant, user=user, bot=bot)
                visible = {
                    fid
                    for fid, (t, _, b, scope) in truth.items()
                    if t == tenant and b == bot and scope in (player_scope(user), character_scope(bot))
                }
                found = {
                    str(p.payload["fact_id"])
                    for p in await world.index.search(VectorQuery.dense(query, facts_filter(req), 100))
                }
                assert found == visible, (tenant, user, bot)
                assert set(await shown(world, req)) == visible, (tenant, user, bot)
