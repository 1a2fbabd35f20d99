"""The memory-extractor on the in-memory log and read models: who witnessed what, what each character learned
(the no-LLM pattern extractor, with the bundled embedder), and promotion requests over ``TestNatsBroker``.

The batch consumer is driven through ``MemoryExtractor.on_batch`` of the router's own wiring (the handler
``create_router`` builds is the same class, given the same read models).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mnemo.services.memory_extractor.app import create_router
from mnemo.services.memory_extractor.handlers import MemoryExtractor
from mnemo.services.memory_extractor.learning import Learning
from mnemo.services.memory_extractor.manual import ManualKnowledge
from mnemo.services.memory_extractor.revisions import Revisions
from mnemo.services.memory_extractor.settings import KnowledgeSettings
from mnemo.shared import subjects
from mnemo.shared.aggregates.knowledge.changes import NotAllowed
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.events.envelope import EventEnvelope, NewEvent
from mnemo.shared.events.recorded import campaign_scope, conversation_stream, created_event_id, knowledge_stream
from mnemo.shared.readmodels.catalog import KNOWLEDGE, WITNESSED
from mnemo.shared.readmodels.inmemory import InMemoryKnowledge
from mnemo.shared.readmodels.inmemory.witnessed import InMemoryWitnessed
from mnemo_client.wire.knowledge_contract import FactAddRequest, FactEditRequest, FactRetractRequest
from tests.components import deps, items, published, served
from tests.envelopes import message_edited

T0 = datetime(2026, 3, 1, tzinfo=UTC)
T, U, C = "t1", "u1", "c1"
SECRET = "The secret is the key is under the red stone."
SCENE = [
    ("My name is Ana Silva and I live in Paris.", ["bard", "rook"]),
    ("I have a cat named Bo.", ["bard", "rook"]),
    (SECRET, ["bard"]),  # the rook is away
    ("I am a smuggler.", ["bard", "rook"]),
]


@pytest.fixture(scope="module")
def embedder() -> BundledEmbedder:
    return BundledEmbedder(batch_size=16)


def message(i: int, content: str, bots: list[str], user: str = U) -> NewEvent:
    return NewEvent(
        event_id=created_event_id(T, user, C, f"m{i}"),
        type="message.recorded",
        tenant_id=T,
        payload={"user_id": user, "conversation_id": C, "message_id": f"m{i}", "role": "user", "author_id": "ana",
                 "author_name": "Ana", "content": content, "created_at": T0 + timedelta(minutes=i), "bot_ids": bots,
                 "persona_id": "ana", "index": i, "tokens": 10},
    )  # fmt: skip


class Extractor:
    def __init__(self, embedder: BundledEmbedder, *, log_of: Extractor | None = None) -> None:
        """``log_of``: another replica whose log (and relay) this one shares, with read models of its own."""
        self.deps = log_of.deps if log_of is not None else deps(embedder=embedder)
        self.store = self.deps.store
        self.knowledge = self.deps.read_model(KNOWLEDGE) if log_of is None else InMemoryKnowledge()
        self.witnessed = self.deps.read_model(WITNESSED) if log_of is None else InMemoryWitnessed()
        learning = Learning(
            self.store, self.deps.saver, self.knowledge, embedder=embedder, settings=KnowledgeSettings()
        )
        revisions = Revisions(self.store, self.knowledge, learning)
        self.handler = MemoryExtractor(self.deps.saver, self.witnessed, learning, revisions)

    async def record(self, events: list[NewEvent], user: str = U) -> list[EventEnvelope]:
        stream = conversation_stream(T, user, C)
        result = await self.store.append(stream, await self.store.stream_version(stream), events)
        return result.committed

    async def deliver(self, events: list[EventEnvelope]) -> None:
        """Hand ``events`` to the handler, then what it published, as the relay brings it back, until quiet."""
        while events:
            assert await self.handler.on_batch(items(events)) == []
            events = published(self.deps).take()

    async def learned(self, character: str) -> list[EventEnvelope]:
        events = await self.store.read_stream(knowledge_stream(T, character))
        return [e for e in events if e.type != "knowledge.witnessed"]

    async def texts(self, character: str, user: str = U) -> list[str]:
        return [f.text for f in await self.knowledge.facts_for(T, character, user_id=user)]


async def test_a_fact_is_learned_only_by_the_characters_present(embedder):
    x = Extractor(embedder)
    log = await x.record([message(i, text, bots) for i, (text, bots) in enumerate(SCENE)])

    await x.deliver(log)

    bard, rook = await x.texts("bard"), await x.texts("rook")
    assert any("red stone" in t for t in bard)
    assert not any("red stone" in t for t in rook), "the rook was away when the secret was told"
    assert "Ana lives in Paris." in rook
    assert "Ana has a cat named Bo." in rook
    assert await x.texts("ana") == [], "the author does not learn what she said herself"
    assert await x.texts("bard", user="u2") == [], "another user's scope"
    assert await x.witnessed.witnesses(T, "rook", ["m0", "m1", "m2", "m3"]) == {"m0", "m1", "m3"}


async def test_redelivery_learns_nothing_twice(embedder):
    x = Extractor(embedder)
    log = await x.record([message(i, text, bots) for i, (text, bots) in enumerate(SCENE)])
    await x.deliver(log)
    learned = await x.learned("bard")

    await x.deliver(log)
    await x.deliver(learned)  # its own fact events, relayed back

    assert await x.learned("bard") == learned
    assert len(await x.texts("bard")) == len(learned)


async def test_each_decision_catches_the_read_model_up_from_the_log_reading_only_what_is_new(embedder):
    """The read model is brought to the log before each duplicate check: a fact another replica appended, not
    yet projected here, is known; then each batch reads only what came after the position it reached."""
    x = Extractor(embedder)
    other = Extractor(embedder, log_of=x)
    await other.deliver(await x.record([message(0, "I live in Paris.", ["bard"])]))
    read_from: list[int] = []
    read_stream = x.store.read_stream

    async def recording(stream_id: str, after_version: int = 0, limit: int | None = None) -> list[EventEnvelope]:
        if stream_id == knowledge_stream(T, "bard"):
            read_from.append(after_version)
        return await read_stream(stream_id, after_version, limit)

    x.store.read_stream = recording  # type: ignore[method-assign]
    await x.deliver(await x.record([message(1, "I live in Paris!", ["bard"])]))
    assert [e.payload["text"] for e in await x.learned("bard")] == ["Ana lives in Paris."], "known from the log"
    assert read_from[0] == 0, "a stream this replica has not seen: from its recorded position, none yet"

    seen = await x.store.stream_version(knowledge_stream(T, "bard"))
    read_from.clear()
    await x.deliver(await x.record([message(2, "I have a cat named Bo.", ["bard"])]))
    assert read_from, "read again before the next check"
    assert min(read_from) >= seen, "only what came after what it had read"


async def test_a_newer_fact_on_the_same_subject_supersedes(embedder):
    x = Extractor(embedder)
    await x.deliver(await x.record([message(0, "I live in Paris.", ["bard"])]))

    await x.deliver(await x.record([message(1, "I live in Rome.", ["bard"])]))

    assert await x.texts("bard") == ["Ana lives in Rome."]
    assert [e.payload["text"] for e in await x.learned("bard")] == ["Ana lives in Paris.", "Ana lives in Rome."]


async def test_editing_a_message_retires_its_fact_and_learns_the_new_one(embedder):
    x = Extractor(embedder)
    await x.deliver(await x.record([message(0, "I live in Paris.", ["bard"])]))
    edit = message_edited(T, U, C, "m0", "I live in Oslo.", T0 + timedelta(hours=1), tokens=4)

    await x.deliver(await x.record([edit]))

    assert await x.texts("bard") == ["Ana lives in Oslo."]
    retired = [e.payload for e in await x.learned("bard") if e.type == "knowledge.fact_retired"]
    assert [(r["message_id"], r["reason"]) for r in retired] == [("m0", "stale")]


# --- promote / unpromote over request-reply ------------------------------------------------------------
@pytest.fixture
async def promotions(embedder):
    x = Extractor(embedder)
    await x.deliver(await x.record([message(0, "I live in Paris.", ["bard"])]))
    (fact,) = await x.knowledge.facts_for(T, "bard", user_id=U)
    async with served(create_router(x.deps, KnowledgeSettings())) as rpc:
        yield rpc, x, fact


async def test_a_promoted_fact_is_known_in_the_campaign_and_unpromoting_brings_it_back(promotions):
    rpc, x, fact = promotions
    owned = {"tenant_id": T, "user_id": U, "fact_id": fact.fact_id}

    promoted = await rpc(subjects.MEMORY_PROMOTE, owned | {"campaign_id": "camp"})
    again = await rpc(subjects.MEMORY_PROMOTE, owned | {"campaign_id": "camp"})
    in_campaign = await x.knowledge.facts_for(T, "bard", user_id="u2", campaign_id="camp")
    unpromoted = await rpc(subjects.MEMORY_UNPROMOTE, owned)

    assert (promoted["scope"], promoted["changed"]) == (campaign_scope("camp"), True)
    assert again["changed"] is False
    assert [f.fact_id for f in in_campaign] == [fact.fact_id], "another player in the campaign sees it"
    assert (unpromoted["scope"], unpromoted["changed"]) == (f"player:{U}", True)
    assert await x.knowledge.facts_for(T, "bard", user_id="u2", campaign_id="camp") == []
    scope_events = published(x.deps).of_type("knowledge.fact_promoted", "knowledge.fact_unpromoted")
    assert [e.type for e in scope_events] == ["knowledge.fact_promoted", "knowledge.fact_unpromoted"]


async def test_promoting_someone_elses_or_an_unknown_fact_is_not_found(promotions):
    rpc, _, fact = promotions

    foreign = await rpc(
        subjects.MEMORY_PROMOTE, {"tenant_id": T, "user_id": "u2", "fact_id": fact.fact_id, "campaign_id": "x"}
    )
    unknown = await rpc(subjects.MEMORY_PROMOTE, {"tenant_id": T, "user_id": U, "fact_id": "nope", "campaign_id": "x"})
    bad = await rpc(subjects.MEMORY_UNPROMOTE, {"tenant_id": T, "user_id": U})

    assert foreign["error"]["code"] == "not_found"
    assert unknown["error"]["code"] == "not_found"
    assert bad["error"]["code"] == "bad_request"
    assert "fact_id" in bad["error"]["message"]


async def test_a_change_by_hand_sees_what_another_replica_changed_before_it_was_projected():
    """Replica A retracts a fact, replica B (same log, its read model not yet told) then edits it: B catches up
    from the log first, so it refuses to edit a retracted fact instead of writing an edit after the retraction."""
    d = deps()
    a_knowledge, b_knowledge = InMemoryKnowledge(), InMemoryKnowledge()
    a, b = ManualKnowledge(d.store, d.saver, a_knowledge), ManualKnowledge(d.store, d.saver, b_knowledge)
    me = {"tenant_id": T, "user_id": U}
    added = await a.add(FactAddRequest(**me, character_id="maren", text="The compass points north."))
    await b_knowledge.apply(published(d).take())  # both replicas know the fact
    await a.retract(FactRetractRequest(**me, fact_id=added.fact_id))

    with pytest.raises(NotAllowed, match="retired"):
        await b.edit(FactEditRequest(**me, fact_id=added.fact_id, text="The compass points south."))
    types = [e.type for e in await d.store.read_stream(knowledge_stream(T, "maren"))]
    assert types == ["knowledge.fact_learned", "knowledge.fact_retired"], "no edit after the retraction"
