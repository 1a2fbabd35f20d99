"""What each character learns, against the real event log (SecantusDB) and relay (nats-server).

The handler is driven with the very envelopes the log holds (what the relay would deliver): first the
conversation's ``message.*`` events, then the knowledge events it wrote (as the relay would bring them back).
Scene: Ana (persona ``ana``) with the bots ``bard`` and ``rook``; ``rook`` leaves before Ana tells a secret
and comes back after it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mnemo.services.memory_extractor.handlers import MemoryExtractor
from mnemo.services.memory_extractor.learning import Learning
from mnemo.services.memory_extractor.revisions import Revisions
from mnemo.services.memory_extractor.settings import KnowledgeSettings
from mnemo.shared.crypto import FieldCipher
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.eventlog.mongo import MongoEventStore
from mnemo.shared.eventlog.relay import Relay
from mnemo.shared.eventlog.save import EventSaver
from mnemo.shared.events.envelope import EventEnvelope, NewEvent
from mnemo.shared.events.recorded import conversation_stream, created_event_id, knowledge_stream
from mnemo.shared.llm.openai import OpenAIChatModel
from mnemo.shared.llm.port import ChatModel
from mnemo.shared.readmodels.catalog import ensure_indexes
from mnemo.shared.readmodels.knowledge import FactView, KnowledgeReadModel
from mnemo.shared.readmodels.witnessed import WitnessedReadModel
from tests.envelopes import message_deleted, message_edited
from tests.fakes.openai_server import CHAT_PATH, FakeOpenAIServer, RecordedRequest, Reply, chat_handler
from tests.integration.event_log import event_log, items

pytestmark = pytest.mark.integration
T0 = datetime(2026, 3, 1, tzinfo=UTC)
SECRET = "The secret is the key is under the red stone."
SCENE: list[tuple[str, list[str]]] = [
    ("My name is Ana Silva and I live in Paris.", ["bard", "rook"]),
    ("I have a cat named Bo.", ["bard", "rook"]),
    (SECRET, ["bard"]),  # rook is away
    ("I am a smuggler.", ["bard", "rook"]),
]


def message(i: int, content: str, bots: list[str], *, tenant: str = "t1", user: str = "u1") -> NewEvent:
    return NewEvent(
        event_id=created_event_id(tenant, user, "c1", f"m{i}"),
        type="message.recorded",
        tenant_id=tenant,
        payload={
            "user_id": user, "conversation_id": "c1", "message_id": f"m{i}", "role": "user", "author_id": "ana",
            "author_name": "Ana", "content": content, "created_at": T0 + timedelta(minutes=i), "bot_ids": bots,
            "persona_id": "ana", "index": i, "tokens": 10,
        },
    )  # fmt: skip


class Env:
    def __init__(self, store: MongoEventStore, relay: Relay, db: Any, cipher: FieldCipher) -> None:
        self.store, self.relay, self.db, self.cipher = store, relay, db, cipher
        self.knowledge = KnowledgeReadModel(db, cipher)

    def extractor(
        self, chat_model: ChatModel | None = None, knowledge: KnowledgeReadModel | None = None, **settings: Any
    ) -> MemoryExtractor:
        knowledge = knowledge or self.knowledge
        saver = EventSaver(self.store, self.relay)
        learning = Learning(
            self.store,
            saver,
            knowledge,
            embedder=BundledEmbedder(),
            chat_model=chat_model,
            settings=KnowledgeSettings(**settings),
        )
        revisions = Revisions(self.store, knowledge, learning)
        return MemoryExtractor(saver, WitnessedReadModel(self.db), learning, revisions)

    async def knowledge_log(self, character: str, tenant: str = "t1") -> list[EventEnvelope]:
        events = await self.store.read_stream(knowledge_stream(tenant, character))
        return [e for e in events if e.type != "knowledge.witnessed"]

    async def texts(self, character: str, user: str = "u1", tenant: str = "t1") -> list[str]:
        return [f.text for f in await self.knowledge.facts_for(tenant, character, user_id=user)]


@pytest.fixture
async def env(mongo_db: Any, nats_url: str) -> AsyncIterator[Env]:
    async with event_log(mongo_db, nats_url) as log:
        e = Env(log.store, log.relay, mongo_db, log.cipher)
        await ensure_indexes(mongo_db)
        yield e


async def record(env: Env, events: list[NewEvent], tenant: str = "t1", user: str = "u1") -> list[EventEnvelope]:
    stream = conversation_stream(tenant, user, "c1")
    await env.store.append(stream, await env.store.stream_version(stream), events)
    return await env.store.read_stream(stream)


async def test_without_llm_present_characters_learn_by_pattern_and_the_absent_one_not_the_secret(env):
    log = await record(env, [message(i, text, bots) for i, (text, bots) in enumerate(SCENE)])
    extractor = env.extractor()
    assert await extractor.on_batch(items(log)) == []
    bard_log = await env.knowledge_log("bard")
    assert await extractor.on_batch(items(log)) == []  # redelivery
    assert await env.knowledge_log("bard") == bard_log, "redelivery appends nothing"

    bard, rook = await env.texts("bard"), await env.texts("rook")
    assert "Ana said the secret is the key is under the red stone." in bard
    assert not [t for t in rook if "red stone" in t], "rook was away when the secret was told"
    assert set(rook) == {"Ana's name is Ana Silva.", "Ana lives in Paris.", "Ana has a cat named Bo.", "Ana is a smuggler."}  # fmt: skip
    assert await env.texts("ana") == [], "the author does not learn what she said herself"
    [secret] = [f for f in await env.knowledge.facts_for("t1", "bard", user_id="u1") if "secret" in f.tags]
    assert (secret.scope, secret.method, secret.message_ids, secret.status) == ("player:u1", "pattern", ("m2",), "active")  # fmt: skip
    assert await env.knowledge.facts_for("t1", "bard", user_id="u2") == [], "another user's scope"
    assert await env.knowledge.facts_for("t2", "bard", user_id="u1") == [], "another tenant"
    raw = await env.db["knowledge"].find_one({"_id": secret.fact_id})
    assert raw["text"].startswith("enc1:")
    assert raw["subject"].startswith("enc1:")
    assert "red stone" not in str(raw)

    # The relayed fact events projected again (another replica, or after a restart) change nothing.
    before = await env.texts("bard")
    await extractor.on_batch(items(bard_log))
    assert await env.texts("bard") == before


async def test_exact_duplicates_are_not_learned_again_and_newer_facts_supersede(env):
    extractor = env.extractor()
    await extractor.on_batch(items(await record(env, [message(0, "I live in Paris.", ["bard"])])))
    log = await record(env, [message(1, "I live in Paris!", ["bard"]), message(2, "I live in Rome.", ["bard"])])
    await extractor.on_batch(items(log[1:]))
    learned = [e.payload["text"] for e in await env.knowledge_log("bard")]
    assert learned == ["Ana lives in Paris.", "Ana lives in Rome."], "the exact duplicate was not appended"
    assert await env.texts("bard") == ["Ana lives in Rome."], "superseded at read time"
    page, total = await env.knowledge.page("t1", "u1", character_id="bard")
    assert total == 2
    assert [(f.text, f.status) for f in page] == [("Ana lives in Rome.", "active"), ("Ana lives in Paris.", "superseded")]  # fmt: skip
    back = await record(env, [message(3, "I live in Paris.", ["bard"])])
    await extractor.on_batch(items(back[3:]))
    assert await env.texts("bard") == ["Ana lives in Paris."], "moving back is news: only current facts dedup"


async def test_the_cap_consolidates_the_oldest_facts_instead_of_dropping_them(env):
    lines = [f"My {k} is {v}." for k, v in [("horse", "Storm"), ("sword", "Dawn"), ("ship", "Gull"), ("dog", "Rex"), ("boat", "Pike"), ("hat", "red")]]  # fmt: skip
    log = await record(env, [message(i, line, ["bard"]) for i, line in enumerate(lines)])
    extractor = env.extractor(cap=3, consolidate_at_least=2)
    await extractor.on_batch(items(log))
    events = await env.knowledge_log("bard")
    learned = [e for e in events if e.type == "knowledge.fact_learned"]
    [merged] = [e for e in events if e.type == "knowledge.facts_consolidated"]
    assert len(learned) == 6, "every fact stays in the log"
    current = await env.knowledge.facts_for("t1", "bard", user_id="u1")
    assert len(current) <= 3
    folded = set(merged.payload["consolidates"])
    assert len(folded) >= 4
    assert merged.payload["method"] == "extractive"
    for e in learned:
        if e.payload["fact_id"] in folded:
            assert e.payload["text"] in merged.payload["text"], "nothing silently dropped"
    assert merged.payload["fact_id"] in {f.fact_id for f in current}
    await extractor.on_batch(items(log))
    assert await env.knowledge_log("bard") == events, "redelivery: no second consolidation"


async def test_an_edit_retires_the_facts_of_the_message_and_re_extracts_a_delete_retires(env):
    extractor = env.extractor()
    log = await record(env, [message(0, "I live in Paris.", ["bard"]), message(1, "I have a cat.", ["bard"])])
    await extractor.on_batch(items(log))
    edit = message_edited("t1", "u1", "c1", "m0", "I live in Oslo.", T0 + timedelta(hours=1), tokens=4)
    delete = message_deleted("t1", "u1", "c1", "m1", T0 + timedelta(hours=2))
    changes = (await record(env, [edit, delete]))[2:]
    await extractor.on_batch(items(changes))
    await extractor.on_batch(items(changes))  # redelivery
    events = await env.knowledge_log("bard")
    retired = [(e.payload["message_id"], e.payload["reason"]) for e in events if e.type == "knowledge.fact_retired"]
    assert retired == [("m0", "stale"), ("m1", "deleted")]
    assert await env.texts("bard") == ["Ana lives in Oslo."]
    learned = [e.payload["text"] for e in events if e.type == "knowledge.fact_learned"]
    assert learned == ["Ana lives in Paris.", "Ana has a cat.", "Ana lives in Oslo."], "the log keeps everything"


def knowledge_answer(request: RecordedRequest) -> dict[str, Any]:
    """A model that (wrongly) says every character learned what was said, including an absent one."""
    prompt = request.json["messages"][0]["content"]
    facts = ["The key is under the red stone."] if "red stone" in prompt else ["Ana has a cat named Bo."]
    return {"updates": [{"character_id": c, "learned_facts": facts} for c in ("bard", "rook", "nobody")]}


async def test_with_llm_updates_for_absent_characters_are_dropped(env):
    log = await record(env, [message(i, text, bots) for i, (text, bots) in enumerate(SCENE)])
    with FakeOpenAIServer() as server:
        server.route("POST", CHAT_PATH, chat_handler(knowledge_answer, model="lore-model"))
        model = OpenAIChatModel(server.base_url, "key", "lore-model", timeout_s=5, max_retries=0)
        await env.extractor(model).on_batch(items(log))
        await model.close()
        prompts = [c.json["messages"][0]["content"] for c in server.calls(CHAT_PATH)]
    assert len(prompts) == 3, "one call per run of equal presence: m0-m1, m2, m3"
    assert "- rook" not in prompts[1], "the absent character is not offered to the model"
    assert "red stone" in prompts[1]
    assert await env.texts("bard") == ["The key is under the red stone.", "Ana has a cat named Bo."]
    assert await env.texts("rook") == ["Ana has a cat named Bo."], "rook learns nothing from the secret message"
    assert await env.texts("nobody") == []
    [fact] = [f for f in await env.knowledge.facts_for("t1", "bard", user_id="u1") if "stone" in f.text]
    assert (fact.method, fact.prompt_version, fact.message_ids) == ("llm:lore-model", "extract_knowledge.v2", ("m2",))  # fmt: skip


async def test_llm_failure_falls_back_to_patterns(env):
    log = await record(env, [message(0, SECRET, ["bard"])])
    with FakeOpenAIServer() as server:
        server.route("POST", CHAT_PATH, lambda _: Reply(503, {"error": "overloaded"}))
        model = OpenAIChatModel(server.base_url, None, "m", timeout_s=5, max_retries=0)
        await env.extractor(model).on_batch(items(log))
        await model.close()
        assert len(server.calls(CHAT_PATH)) == 1
    [fact] = await env.knowledge.facts_for("t1", "bard", user_id="u1")
    assert fact.method == "pattern"
    assert "red stone" in fact.text


async def test_near_duplicates_by_embedding_are_not_learned_again(env):
    answers = iter([["Ana has a cat named Bo."], ["Ana owns a cat called Bo.", "Ana lives in Port Vell."]])
    lines = [("I have a cat named Bo.", ["bard"]), ("My cat Bo is mine. I live in Port Vell.", ["bard", "rook"])]
    log = await record(env, [message(i, text, bots) for i, (text, bots) in enumerate(lines)])
    with FakeOpenAIServer() as server:
        server.route("POST", CHAT_PATH, chat_handler(lambda _: {"updates": [{"character_id": "bard", "learned_facts": next(answers)}]}))  # fmt: skip
        model = OpenAIChatModel(server.base_url, "key", "m", timeout_s=5, max_retries=0)
        await env.extractor(model).on_batch(items(log))
        await model.close()
    assert await env.texts("bard") == ["Ana lives in Port Vell.", "Ana has a cat named Bo."]


def extracting_or_consolidating(request: RecordedRequest) -> dict[str, Any]:
    prompt: str = request.json["messages"][0]["content"]
    if "fold the facts below into ONE broader statement" in prompt:
        return {"fact": "Ana owns a horse Storm, a sword Dawn, a ship Gull and a dog Rex."}
    line = prompt.split("<transcript>")[1].split("</transcript>")[0].strip().removeprefix("Ana: ")
    return {"updates": [{"character_id": "bard", "learned_facts": [f"Ana said: {line}"]}]}


async def test_with_llm_the_cap_consolidates_through_the_consolidation_prompt(env):
    names = [("horse", "Storm"), ("sword", "Dawn"), ("ship", "Gull"), ("dog", "Rex"), ("boat", "Pike")]
    # alternating presence: one extraction call per message
    log = await record(env, [message(i, f"My {k} is {v}.", ["bard"] if i % 2 else ["bard", "rook"]) for i, (k, v) in enumerate(names)])  # fmt: skip
    with FakeOpenAIServer() as server:
        server.route("POST", CHAT_PATH, chat_handler(extracting_or_consolidating, model="m2"))
        model = OpenAIChatModel(server.base_url, "key", "m2", timeout_s=5, max_retries=0)
        await env.extractor(model, cap=3, consolidate_at_least=2).on_batch(items(log))
        await model.close()
    [merged] = [e for e in await env.knowledge_log("bard") if e.type == "knowledge.facts_consolidated"]
    assert merged.payload["text"] == "Ana owns a horse Storm, a sword Dawn, a ship Gull and a dog Rex."
    assert (merged.payload["method"], merged.payload["prompt_version"]) == ("llm:m2", "consolidate_facts.v1")
    current = await env.knowledge.facts_for("t1", "bard", user_id="u1")
    assert len(current) <= 3
    assert merged.payload["fact_id"] in {f.fact_id for f in current}


async def test_deleting_a_source_of_a_consolidated_fact_keeps_what_came_from_other_messages(env):
    lines = ["My horse is Storm.", "My sword is Dawn.", "My ship is Gull.", "My dog is Rex.", "My hat is red."]
    log = await record(env, [message(i, line, ["bard"]) for i, line in enumerate(lines)])
    extractor = env.extractor(cap=3, consolidate_at_least=3)
    await extractor.on_batch(items(log))
    [merged] = [f for f in await env.knowledge.facts_for("t1", "bard", user_id="u1") if f.consolidates]
    assert merged.text == "Ana's horse is Storm. Ana's sword is Dawn. Ana's ship is Gull."
    delete = message_deleted("t1", "u1", "c1", "m1", T0 + timedelta(hours=2))
    [deleted] = (await record(env, [delete]))[5:]
    await extractor.on_batch(items([deleted]))
    await extractor.on_batch(items([deleted]))  # redelivery
    texts = await env.texts("bard")
    assert "Ana's horse is Storm. Ana's ship is Gull." in texts, "re-consolidated without the deleted message"
    assert not [t for t in texts if "Dawn" in t]
    assert {"Ana's dog is Rex.", "Ana's hat is red."} <= set(texts)
    consolidations = [e for e in await env.knowledge_log("bard") if e.type == "knowledge.facts_consolidated"]
    assert len(consolidations) == 2


class ReadTogether(KnowledgeReadModel):
    """The real read model, but a learner's first dedup read waits for the other learner's: both check "is this
    fact known?" before either appends (two replicas, or a redelivery racing a slower attempt, under chaos)."""

    def __init__(self, db: Any, cipher: FieldCipher, barrier: asyncio.Barrier) -> None:
        super().__init__(db, cipher)
        self._barrier, self._waited = barrier, False

    async def owned(self, *args: Any, **kwargs: Any) -> list[FactView]:
        found = await super().owned(*args, **kwargs)
        if not self._waited:
            self._waited = True
            await self._barrier.wait()
        return found


@pytest.mark.parametrize("second", ["I live in Paris.", "I live in Paris!"], ids=["same message", "equivalent"])
async def test_two_replicas_checking_at_once_learn_a_fact_once(env, second):
    """Replica A handles m0; replica B handles m0 again (a redelivery) or m1 saying the same thing."""
    log = await record(env, [message(0, "I live in Paris.", ["bard"]), message(1, second, ["bard"])])
    barrier = asyncio.Barrier(2)
    replicas = [env.extractor(knowledge=ReadTogether(env.db, env.cipher, barrier)) for _ in range(2)]
    batches = [log[:1], log[:1] if second == "I live in Paris." else log[1:]]
    await asyncio.gather(*(r.on_batch(items(b)) for r, b in zip(replicas, batches, strict=True)))
    learned = [e.payload["text"] for e in await env.knowledge_log("bard")]
    assert learned == ["Ana lives in Paris."], "the fact was learned once"
    assert await env.texts("bard") == ["Ana lives in Paris."]


class SlowToProject(KnowledgeReadModel):
    """The real read model, but the replica's own projection of the facts it appended waits for ``go``: the
    log already holds them, the read model not yet (a writer between its append and its projection)."""

    def __init__(self, db: Any, cipher: FieldCipher) -> None:
        super().__init__(db, cipher)
        self.appended, self.go = asyncio.Event(), asyncio.Event()

    async def apply(self, events: Sequence[EventEnvelope]) -> None:
        if any(e.type == "knowledge.fact_learned" for e in events) and not self.appended.is_set():
            self.appended.set()
            await self.go.wait()
        await super().apply(events)


async def test_a_fact_appended_but_not_yet_projected_is_not_learned_again(env):
    """Replica A appended "Ana lives in Paris." and has not projected it yet when replica B, reading the stream
    version after A's append, checks the same fact from another message: B must see it in the log (CI,
    2026-11-28: under load the version B read was already past A's append, the read model not)."""
    log = await record(env, [message(0, "I live in Paris.", ["bard"]), message(1, "I live in Paris!", ["bard"])])
    slow = SlowToProject(env.db, env.cipher)
    first = asyncio.create_task(env.extractor(knowledge=slow).on_batch(items(log[:1])))
    await asyncio.wait_for(slow.appended.wait(), 30)
    assert await env.extractor().on_batch(items(log[1:])) == []
    slow.go.set()
    assert await first == []
    learned = [e.payload["text"] for e in await env.knowledge_log("bard")]
    assert learned == ["Ana lives in Paris."], "the fact was learned once"
    assert await env.texts("bard") == ["Ana lives in Paris."]


class PausedAfterReading(KnowledgeReadModel):
    """The real read model, but the first read that finds ``count`` facts waits for ``go`` before returning:
    the replica has read the facts it will fold, then another replica learns and folds meanwhile."""

    def __init__(self, db: Any, cipher: FieldCipher, count: int) -> None:
        super().__init__(db, cipher)
        self.count, self.reached, self.go = count, asyncio.Event(), asyncio.Event()

    async def owned(self, *args: Any, **kwargs: Any) -> list[FactView]:
        found = await super().owned(*args, **kwargs)
        if len(found) == self.count and not self.reached.is_set():
            self.reached.set()
            await self.go.wait()
        return found


async def test_two_replicas_folding_at_once_fold_each_fact_once(env):
    """Replica A learns four facts (one past the cap) and reads them to fold the oldest two; before it
    appends, replica B learns a fifth and folds the oldest three. A's plan is stale: it must not fold the
    first two again."""
    lines = [f"My {k} is {v}." for k, v in [("horse", "Storm"), ("sword", "Dawn"), ("ship", "Gull"), ("dog", "Rex"), ("boat", "Pike")]]  # fmt: skip
    log = await record(env, [message(i, line, ["bard"]) for i, line in enumerate(lines)])
    paused = PausedAfterReading(env.db, env.cipher, count=4)
    replica_a = env.extractor(knowledge=paused, cap=3, consolidate_at_least=2)
    replica_b = env.extractor(cap=3, consolidate_at_least=2)
    folding = asyncio.create_task(replica_a.on_batch(items(log[:4])))
    await asyncio.wait_for(paused.reached.wait(), 30)
    assert await replica_b.on_batch(items(log[4:])) == []
    paused.go.set()
    assert await folding == []

    consolidations = [e for e in await env.knowledge_log("bard") if e.type == "knowledge.facts_consolidated"]
    folded = [fact_id for e in consolidations for fact_id in e.payload["consolidates"]]
    assert consolidations, "past the cap, facts were folded"
    assert len(folded) == len(set(folded)), "no fact folded into two consolidations"
    current = await env.knowledge.facts_for("t1", "bard", user_id="u1")
    assert len(current) <= 3
    for line in ("Storm", "Dawn", "Gull", "Rex", "Pike"):
        assert [f for f in current if line in f.text], f"{line}: every fact is still known, once"
