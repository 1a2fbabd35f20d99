"""Summarizer and memory-extractor handlers against the real event log (SecantusDB) and relay (nats-server).

The handlers are driven with the very envelopes the log holds (what the relay would deliver); the JetStream
consumer plumbing itself is ``mnemo.shared.delivery``'s and tested there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mnemo.services.memory_extractor.handlers import MemoryExtractor
from mnemo.services.summarizer.handlers import Summarizer
from mnemo.services.summarizer.settings import SummarizerSettings
from mnemo.shared.crypto import FieldCipher
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.eventlog.mongo import MongoEventStore
from mnemo.shared.eventlog.relay import Relay
from mnemo.shared.eventlog.save import EventSaver
from mnemo.shared.events.envelope import NewEvent
from mnemo.shared.events.recorded import conversation_stream, knowledge_stream, summary_stream
from mnemo.shared.llm.openai import OpenAIChatModel
from mnemo.shared.readmodels.summaries import SummariesReadModel
from mnemo.shared.readmodels.witnessed import WitnessedReadModel
from tests.fakes.openai_server import CHAT_PATH, FakeOpenAIServer, Reply, chat_handler
from tests.integration.event_log import event_log, items

pytestmark = pytest.mark.integration
T0 = datetime(2026, 3, 1, tzinfo=UTC)
TEXTS = [
    "The dragon attacked the village at dawn.",
    "Villagers fled as the dragon burned the houses. Did you eat breakfast?",
    "The dragon's fire destroyed the village granary.",
    "Knights rode out to fight the dragon near the village.",
    "The knights wounded the dragon and it fled to the mountain.",
    "Next day we met a merchant.",
]


def recorded(i: int) -> NewEvent:
    return NewEvent(
        type="message.recorded",
        tenant_id="t1",
        payload={
            "user_id": "u1", "conversation_id": "c1", "message_id": f"m{i}", "role": "user" if i % 2 else "assistant",
            "author_id": None, "author_name": "Ana" if i % 2 else "Bard", "content": TEXTS[i],
            "created_at": T0 + timedelta(minutes=i), "bot_ids": ["bard"], "persona_id": "ana" if i else None,
            "index": i, "tokens": 10,
        },
    )  # fmt: skip


@pytest.fixture
async def env(mongo_db: Any, nats_url: str) -> AsyncIterator[tuple[MongoEventStore, Relay, FieldCipher]]:
    async with event_log(mongo_db, nats_url) as log:
        yield log.store, log.relay, log.cipher


async def test_summary_is_created_once_and_projected(env, mongo_db):
    store, relay, cipher = env
    stream = conversation_stream("t1", "u1", "c1")
    await store.append(stream, 0, [recorded(i) for i in range(6)])
    log = await store.read_stream(stream)
    summaries = SummariesReadModel(mongo_db, cipher)
    summarizer = Summarizer(
        store, EventSaver(store, relay), BundledEmbedder(), summaries, SummarizerSettings(max_tokens=30)
    )

    assert await summarizer.on_batch(items(log)) == []
    assert await summarizer.on_batch(items(log)) == []  # redelivery: nothing new
    written = await store.read_stream(summary_stream("t1", "u1", "c1"))
    assert [e.type for e in written] == ["summary.created"]
    payload = written[0].payload
    assert (payload["first_index"], payload["last_index"]) == (0, 4)
    assert payload["message_ids"] == ["m0", "m1", "m2", "m3", "m4"]
    assert payload["participants"] == ["bard", "ana"]
    assert payload["audience"] == ["bard", "ana"], "m0 names no persona: it does not exclude ana"
    assert "dragon" in payload["text"]
    assert "breakfast" not in payload["text"]
    assert written[0].causation_id == log[4].event_id
    unpublished = {e.event_id for e in await store.unpublished(0, 100)}
    assert written[0].event_id not in unpublished, "published through the relay"

    await summarizer.on_batch(items(written))
    [view] = await summaries.live_summaries("t1", "u1", "c1")
    assert view.text == payload["text"]
    assert (view.audience, view.status) == (("bard", "ana"), "active")
    assert await summaries.live_summaries("t1", "u1", "c1", audience_member="ana") == [view]
    assert await summaries.live_summaries("t1", "u1", "c1", audience_member="rook") == []
    assert [v.summary_id for v in await summaries.by_ids("t1", [view.summary_id])] == [view.summary_id]
    assert await summaries.by_ids("t2", [view.summary_id]) == [], "tenant scoped"
    raw = await mongo_db["summaries"].find_one({"_id": view.summary_id})
    assert raw["text"].startswith("enc1:"), "text encrypted at rest"


async def test_witnesses_are_appended_in_one_batch_and_projected(env, mongo_db):
    store, relay, _ = env
    stream = conversation_stream("t1", "u1", "c1")
    await store.append(stream, 0, [recorded(i) for i in range(3)])
    log = await store.read_stream(stream)
    witnessed = WitnessedReadModel(mongo_db)
    extractor = MemoryExtractor(EventSaver(store, relay), witnessed)

    await extractor.on_batch(items(log))
    await extractor.on_batch(items(log))  # redelivery: duplicates, nothing new
    bard = await store.read_stream(knowledge_stream("t1", "bard"))
    ana = await store.read_stream(knowledge_stream("t1", "ana"))
    assert [e.payload["message_ids"] for e in bard] == [["m0"], ["m1"], ["m2"]]
    assert [e.payload["message_ids"] for e in ana] == [["m1"], ["m2"]], "no persona on m0"

    await extractor.on_batch(items(bard + ana))
    await extractor.on_batch(items(bard + ana))
    assert await witnessed.witnesses("t1", "ana", ["m0", "m1", "m2", "mx"]) == {"m1", "m2"}
    assert await witnessed.known_message_ids("t1", "bard", conversation_id="c1") == ["m0", "m1", "m2"]
    assert await witnessed.witnesses("t2", "bard", ["m0"]) == set()
    assert await mongo_db["witnessed"].count_documents({}) == 5


def llm_summarizer(store, relay, mongo_db, cipher, model: OpenAIChatModel) -> Summarizer:
    return Summarizer(
        store,
        EventSaver(store, relay),
        BundledEmbedder(),
        SummariesReadModel(mongo_db, cipher),
        SummarizerSettings(),
        model,
    )


async def test_llm_summary_records_model_and_prompt_version(env, mongo_db):
    """With an LLM configured, the summary is the model's, tagged with the prompt version and model."""
    store, relay, cipher = env
    stream = conversation_stream("t1", "u1", "c1")
    await store.append(stream, 0, [recorded(i) for i in range(5)])
    log = await store.read_stream(stream)
    answer = {
        "summary": "A dragon burned the village; knights drove it off.",
        "importance": 7,
        "emotional_context": "Fear, then relief.",
    }
    with FakeOpenAIServer() as server:
        server.route("POST", CHAT_PATH, chat_handler(lambda _: answer, model="story-model"))
        model = OpenAIChatModel(server.base_url, "key", "story-model", timeout_s=5, max_retries=0)
        summarizer = llm_summarizer(store, relay, mongo_db, cipher, model)
        await summarizer.on_batch(items(log))
        await model.close()
        sent = server.calls(CHAT_PATH)[0].json["messages"][0]["content"]
    [written] = await store.read_stream(summary_stream("t1", "u1", "c1"))
    assert written.payload["text"] == answer["summary"]
    assert written.payload["importance"] == 7
    assert written.payload["emotional_context"] == "Fear, then relief."
    assert written.payload["method"] == "llm:story-model"
    assert written.payload["prompt_version"] == "summarize.v1"
    assert "The dragon attacked the village at dawn." in sent, "the range's transcript reaches the model"


async def test_llm_failure_falls_back_to_the_extractive_summary(env, mongo_db):
    store, relay, cipher = env
    stream = conversation_stream("t1", "u1", "c1")
    await store.append(stream, 0, [recorded(i) for i in range(5)])
    log = await store.read_stream(stream)
    with FakeOpenAIServer() as server:
        server.route("POST", CHAT_PATH, lambda _: Reply(503, {"error": "overloaded"}))
        model = OpenAIChatModel(server.base_url, None, "story-model", timeout_s=5, max_retries=1, backoff_s=0.01)
        summarizer = llm_summarizer(store, relay, mongo_db, cipher, model)
        await summarizer.on_batch(items(log))
        await model.close()
        assert len(server.calls(CHAT_PATH)) == 2, "the model was tried (with its retry) before falling back"
    [written] = await store.read_stream(summary_stream("t1", "u1", "c1"))
    assert written.payload["method"] == "extractive"
    assert "dragon" in written.payload["text"]
