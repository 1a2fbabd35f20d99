"""The context-assembler over real NATS request-reply, SecantusDB read models, Qdrant Edge and the bundled model.

Read models and vectors are seeded directly through their adapters (as ingest and embedding would leave
them); the request goes through a plain nats-py client, as a platform would send it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import nats
import pytest
from faststream.nats import NatsBroker
from nats.aio.client import Client as NatsClient

from mnemo.services.context_assembler.app import create_router
from mnemo.services.context_assembler.settings import AssemblerSettings
from mnemo.shared import subjects
from mnemo.shared.broker import start_broker
from mnemo.shared.crypto import FieldCipher
from mnemo.shared.deps import Deps
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.eventlog.codec import EventCodec
from mnemo.shared.eventlog.mongo import MongoEventStore
from mnemo.shared.events.envelope import EventEnvelope, deterministic_id
from mnemo.shared.events.recorded import EVERYONE, REGISTRY, bot_stream, persona_stream, summary_stream
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.readmodels.catalog import ensure_indexes
from mnemo.shared.readmodels.summaries import SummariesReadModel
from mnemo.shared.settings import Settings
from mnemo.shared.sparse import document_vector
from mnemo.shared.vectors.port import VectorIndex, VectorIndexUnavailable, VectorPoint
from tests.envelopes import message_recorded, recorded
from tests.waiting import request_reply

pytestmark = pytest.mark.integration

T0 = datetime(2026, 2, 1, 18, 0, tzinfo=UTC)
USER, CONV, BOT, PERSONA = "u1", "c1", "bot-mirelle", "p-tobin"
LINES = [
    ("user", "Tobin", "Captain, I found a silver key hidden under the lighthouse stairs."),
    ("assistant", "Mirelle", "Keep it safe. That key opens the vault of the old harbour."),
    ("user", "Tobin", "I wrapped the silver key in oilcloth and put it in my boot."),
    ("assistant", "Mirelle", "Good. Now help me trim the sails before the storm."),
] + [
    (
        "user" if i % 2 == 0 else "assistant",
        "Tobin" if i % 2 == 0 else "Mirelle",
        f"We talk about rope and knots, part {i}.",
    )
    for i in range(4, 16)
]


def env(tenant: str, stream: str, version: int, type_: str, payload: dict[str, Any]) -> EventEnvelope:
    return recorded(tenant, stream, version, type_, payload, T0)


def scene_message(tenant: str, i: int, role: str, name: str, text: str, created_at: datetime) -> EventEnvelope:
    """Message ``i`` of the conversation: the user (as the persona) or the bot, both present."""
    author_id = BOT if role == "assistant" else PERSONA
    return message_recorded(
        tenant, USER, CONV, i, text, created_at=created_at, role=role, author_id=author_id, author_name=name,
        bot_ids=[BOT], persona_id=PERSONA,
    )  # fmt: skip


def message_events(tenant: str, lines: Sequence[tuple[str, str, str]]) -> list[EventEnvelope]:
    return [
        scene_message(tenant, i, role, name, text, T0 + timedelta(minutes=i))
        for i, (role, name, text) in enumerate(lines)
    ]


def summary_event(tenant: str, summary_id: str, text: str) -> EventEnvelope:
    payload = {
        "summary_id": summary_id,
        "user_id": USER,
        "conversation_id": CONV,
        "summary_type": "short_term",
        "text": text,
        "importance": 6,
        "participants": [BOT, PERSONA],
        "start_at": T0,
        "end_at": T0 + timedelta(minutes=4),
        "message_ids": ["m0", "m1", "m2", "m3", "m4"],
        "first_index": 0,
        "last_index": 4,
        "method": "extractive",
        # Its text is message m2's sentence: it cites that message alone.
        "citations": [{"message_id": "m2", "start": 0, "end": len(text)}],
    }
    return env(tenant, summary_stream(tenant, USER, CONV), 1, "summary.created", payload)


@pytest.fixture(scope="module")
def embedder() -> BundledEmbedder:
    return BundledEmbedder(batch_size=16)


class BrokenIndex:
    """A vector index whose searches fail (the server is down): fault injection, not a stand-in."""

    def __init__(self, real: VectorIndex) -> None:
        self._real = real

    async def search(self, *args: Any, **kwargs: Any) -> Any:
        raise VectorIndexUnavailable("qdrant unreachable")

    async def hybrid_search(self, *args: Any, **kwargs: Any) -> Any:
        raise VectorIndexUnavailable("qdrant unreachable")

    async def hybrid_search_many(self, *args: Any, **kwargs: Any) -> Any:
        raise VectorIndexUnavailable("qdrant unreachable")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def cast(tenant: str) -> list[EventEnvelope]:
    """The scene's bot and persona, as their profiles' events (what every seed of the scene records first)."""
    bot = env(tenant, bot_stream(tenant, BOT), 1, "bot.recorded", {
        "bot_id": BOT, "owner_user_id": None, "name": "Captain Mirelle",
        "system_prompt": "You are a weary airship captain. Speak tersely.", "updated_at": T0,
    })  # fmt: skip
    persona = env(tenant, persona_stream(tenant, USER, PERSONA), 1, "persona.recorded", {
        "user_id": USER, "persona_id": PERSONA, "name": "Tobin",
        "description": "A young stowaway with a secret.", "traits": ["curious", "nimble"], "updated_at": T0,
    })  # fmt: skip
    return [bot, persona]


async def seed(db: Any, cipher: FieldCipher, index: VectorIndex, embedder: BundledEmbedder, tenant: str) -> None:
    models = ReadModels(db, cipher)
    await ensure_indexes(db)
    messages = message_events(tenant, LINES)
    await models.apply([*cast(tenant), *messages])
    sid = deterministic_id("summary", tenant, "s1")
    await SummariesReadModel(db, cipher).apply(
        [summary_event(tenant, sid, "Tobin found a silver key at the lighthouse.")]
    )
    texts = [m.payload["content"] for m in messages] + ["Tobin found a silver key at the lighthouse."]
    vectors = await embedder.embed(texts)
    scope = {"tenant_id": tenant, "user_id": USER, "conversation_id": CONV}
    points = [
        VectorPoint(
            deterministic_id("pt", tenant, m.payload["message_id"]),
            v,
            {**scope, "kind": "message", "message_id": m.payload["message_id"], "audience": [BOT]},
            document_vector(m.payload["content"]),
        )
        for m, v in zip(messages, vectors, strict=False)
    ]
    points.append(
        VectorPoint(
            deterministic_id("pt", tenant, sid),
            vectors[-1],
            {**scope, "kind": "summary", "summary_id": sid, "audience": [EVERYONE]},
            document_vector(texts[-1]),
        )
    )
    await index.upsert(points)


async def start_assembler(
    nats_url: str,
    db: Any,
    cipher: FieldCipher,
    index: Any,
    embedder: Any,
    min_score: float = 0.3,
    settings: AssemblerSettings | None = None,
    reads: Any = None,
) -> NatsBroker:
    broker = NatsBroker(nats_url, logger=None)
    codec = EventCodec(REGISTRY, cipher)
    deps = Deps(
        Settings(nats_url=nats_url), broker, db, MongoEventStore(db, codec), codec, publisher=None, cipher=cipher
    )  # type: ignore[arg-type]
    deps.vectors, deps.embedder = index, embedder
    settings = settings or AssemblerSettings(history_limit=6, min_score=min_score)
    broker.include_router(create_router(deps, settings, reads))
    await start_broker(broker)
    await until_answering(nats_url)
    return broker


async def until_answering(nats_url: str) -> None:
    """Readiness probe: an invalid body until its bad_request reply comes. On a loaded machine a request sent
    right after ``start_broker`` still got "no responders" about once in 40 starts (the subscription not yet
    registered despite the flush), which no test here is about."""
    client = await nats.connect(nats_url)
    try:
        for _ in range(200):
            try:
                await client.request(subjects.CONTEXT_ASSEMBLE, b"probe", timeout=5)
                return
            except nats.errors.NoRespondersError:
                await asyncio.sleep(0.02)
        raise AssertionError("the assembler never subscribed")
    finally:
        await client.drain()


async def ask(nc: NatsClient, body: bytes | dict[str, Any]) -> dict[str, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    reply = await request_reply(nc, subjects.CONTEXT_ASSEMBLE, data, timeout=20)
    result: dict[str, Any] = json.loads(reply.data)
    return result


def request(tenant: str, **over: Any) -> dict[str, Any]:
    base = {"tenant_id": tenant, "user_id": USER, "conversation_id": CONV, "bot_id": BOT, "persona_id": PERSONA,
            "user_message": "Where is the silver key now?", "max_tokens": 2000}  # fmt: skip
    return {**base, **over}


async def test_full_context_over_nats(nats_url, mongo_db, cipher, index, embedder, nc, tenant):
    await seed(mongo_db, cipher, index, embedder, tenant)
    other = f"{tenant}-other"  # same ids, another tenant: must never show up
    await seed(mongo_db, cipher, index, embedder, other)
    broker = await start_assembler(nats_url, mongo_db, cipher, index, embedder)
    try:
        reply = await ask(nc, request(tenant))
        concurrent = await asyncio.gather(*(ask(nc, request(tenant, user_message=f"knots {i}")) for i in range(8)))
    finally:
        await broker.stop()
    assert all("error" not in r and "part 15" in r["context"] for r in concurrent)
    assert reply["degraded"] == []
    names = [s["name"] for s in reply["sections"]]
    assert names == ["system", "persona", "memories", "directive", "retrieved", "history"]
    system, persona, memories, directive, retrieved, history = reply["sections"]
    assert "Captain Mirelle's response MUST be consistent" in directive["text"]
    assert system["text"].startswith("You are Captain Mirelle.")
    assert "Tobin" in persona["text"]
    assert "silver key at the lighthouse" in memories["text"]
    assert "% relevant]" in memories["text"]
    assert "silver key" in retrieved["text"]
    assert "part 15" in history["text"]
    assert reply["token_count"] == sum(s["tokens"] for s in reply["sections"])
    assert reply["token_count"] <= 2000
    kinds = {s["kind"] for s in reply["sources"]}
    assert kinds == {"system", "persona", "summary", "message"}
    history_ids = [f"m{i}" for i in range(10, 16)]
    msg_sources = [s for s in reply["sources"] if s["kind"] == "message"]
    assert [s["id"] for s in msg_sources if s["score"] is None] == history_ids
    retrieved_ids = [s["id"] for s in msg_sources if s["score"] is not None]
    assert "m0" in retrieved_ids or "m2" in retrieved_ids
    assert not set(retrieved_ids) & set(history_ids), "history messages are excluded from retrieval"
    summary = next(s for s in reply["sources"] if s["kind"] == "summary")
    assert summary["message_ids"] == ["m2"], "the message its text cites, not every message it covers"
    assert summary["id"] == deterministic_id("summary", tenant, "s1")


async def test_invalid_requests_get_bad_request(nats_url, mongo_db, cipher, index, embedder, nc, tenant):
    broker = await start_assembler(nats_url, mongo_db, cipher, index, embedder)
    try:
        not_json = await ask(nc, b"{not json")
        unknown = await ask(nc, request(tenant, max_token=100))
        no_tenant = await ask(nc, {k: v for k, v in request(tenant).items() if k != "tenant_id"})
        too_small = await ask(nc, request(tenant, max_tokens=3))
        json_header = await nc.request(
            subjects.CONTEXT_ASSEMBLE, b"[1,", timeout=20, headers={"content-type": "application/json"}
        )
    finally:
        await broker.stop()
    for reply in (not_json, unknown, no_tenant, too_small, json.loads(json_header.data)):
        assert set(reply) == {"error"}
        assert reply["error"]["code"] == "bad_request"
    assert "max_token" in unknown["error"]["message"]
    assert "tenant_id" in no_tenant["error"]["message"]


async def test_failing_vector_index_and_unknown_bot_degrade_but_reply(
    nats_url, mongo_db, cipher, index, embedder, nc, tenant
):
    await seed(mongo_db, cipher, index, embedder, tenant)
    broker = await start_assembler(nats_url, mongo_db, cipher, BrokenIndex(index), embedder)
    try:
        reply = await ask(nc, request(tenant, bot_id="bot-nobody"))
    finally:
        await broker.stop()
    assert reply["degraded"] == ["bot_profile", "vector_index"]
    # No history either: every seeded message names its bots, and bot-nobody was never in the scene.
    assert [s["name"] for s in reply["sections"]] == ["system", "persona", "directive"]
    assert "roleplay" in reply["sections"][0]["text"]
    assert reply["sources"][0] == {
        "kind": "system",
        "id": "bot-nobody",
        "message_ids": [],
        "score": None,
        "detail": None,
        "exact_kind": None,
        "assets": [],
    }


async def test_a_word_match_is_retrieved_below_min_score(nats_url, mongo_db, cipher, index, embedder, nc, tenant):
    # min_score 0.99 shuts the dense side: only the lexical match on "oilcloth" can bring m2 back.
    await seed(mongo_db, cipher, index, embedder, tenant)
    question = "What about the oilcloth?"
    broker = await start_assembler(nats_url, mongo_db, cipher, index, embedder, min_score=0.99)
    try:
        reply = await ask(nc, request(tenant, user_message=question))
    finally:
        await broker.stop()
    assert reply["degraded"] == []
    retrieved = {s["id"]: s["score"] for s in reply["sources"] if s["kind"] == "message" and s["score"] is not None}
    assert max(retrieved, key=lambda k: retrieved[k]) == "m2"  # the rare word outweighs the common ones (IDF)
    # The score is the re-ranked relevance (mnemo/services/context_assembler/search/ranking.py), in [0, 1].
    assert 0 < retrieved["m2"] <= 1


async def test_profile_fields_persona_labels_and_chat_messages_over_nats(
    nats_url, mongo_db, cipher, index, embedder, nc, tenant
):
    """Two personas in one conversation: lines are labelled with each persona's recorded name (not the
    platform's author name), the system section notes the switch, the chat messages follow the history."""
    await seed(mongo_db, cipher, index, embedder, tenant)
    models = ReadModels(mongo_db, cipher)
    await models.apply([
        env(tenant, bot_stream(tenant, BOT), 2, "bot.recorded", {
            "bot_id": BOT, "owner_user_id": None, "name": "Captain Mirelle", "system_prompt": "Speak tersely.",
            "gender": "female", "age": "52", "knowledge_sharing": "guarded", "updated_at": T0,
        }),
        env(tenant, persona_stream(tenant, USER, PERSONA), 2, "persona.recorded", {
            "user_id": USER, "persona_id": PERSONA, "name": "Tobin", "description": "", "traits": [],
            "instructions": "Call me Captain Tobin.", "updated_at": T0,
        }),
        env(tenant, persona_stream(tenant, USER, "p-aria"), 1, "persona.recorded", {
            "user_id": USER, "persona_id": "p-aria", "name": "Aria", "description": "", "traits": [],
            "updated_at": T0,
        }),
    ])  # fmt: skip
    switch = [("user", "someone", "I am Aria now, singing by the mast."), ("assistant", "Mirelle", "Sing then.")]
    events = message_events(tenant, LINES + switch)[len(LINES) :]
    events[0] = env(tenant, events[0].stream_id, events[0].version, events[0].type,
                    {**events[0].payload, "persona_id": "p-aria", "author_id": "p-aria"})  # fmt: skip
    await models.apply(events)
    broker = await start_assembler(nats_url, mongo_db, cipher, index, embedder)
    try:
        reply = await ask(nc, request(tenant, user_message="", persona_id=None))
    finally:
        await broker.stop()
    assert reply["degraded"] == []
    texts = {s["name"]: s["text"] for s in reply["sections"]}
    assert texts["system"].startswith("You are Captain Mirelle.\nGender: female. Age: 52.\nSpeak tersely.")
    assert "only with those they trust" in texts["system"]
    assert "more than one persona in this conversation (Tobin, Aria)" in texts["system"]
    assert "Call me Captain Tobin." in texts["persona"], "the conversation's active persona, with its instructions"
    assert "Aria (user persona): I am Aria now, singing by the mast." in texts["history"]
    assert "Tobin (user persona): We talk about rope and knots, part 14." in texts["history"]
    messages = reply["messages"]
    assert messages[0] == {"role": "system", "content": "\n\n".join(
        s["text"] for s in reply["sections"] if s["name"] != "history")}  # fmt: skip
    assert messages[-2:] == [
        {"role": "user", "content": "Aria: I am Aria now, singing by the mast."},
        {"role": "assistant", "content": "Sing then."},
    ]
    assert len(messages) == 1 + sum(1 for s in reply["sources"] if s["kind"] == "message" and s["score"] is None)


class HangingReads:
    """Read models that never answer for the parts named (a MongoDB that accepts queries and stalls):
    fault injection around the real adapter."""

    def __init__(self, real: Any, hang: set[str]) -> None:
        self._real = real
        self._hang = hang

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._real, name)
        if name not in self._hang:
            return method

        async def stalled(*args: Any, **kwargs: Any) -> Any:
            await asyncio.Event().wait()

        return stalled


async def test_stalled_read_models_are_bounded_by_the_deadline(nats_url, mongo_db, cipher, index, embedder, nc, tenant):
    """A read that never returns cannot hold the reply: it is given up at the deadline and named. The reply
    arriving at all is the proof (these reads would wait forever)."""
    from mnemo.services.context_assembler.gather.reads import ReadModelReads
    from mnemo.shared.readmodels.catalog import MongoReadModelPorts

    await seed(mongo_db, cipher, index, embedder, tenant)
    reads = HangingReads(
        ReadModelReads.over(MongoReadModelPorts(mongo_db, cipher)), {"recent_messages", "knowledge", "summaries_by_ids"}
    )
    settings = AssemblerSettings(history_limit=6, read_timeout_s=0.3)
    broker = await start_assembler(nats_url, mongo_db, cipher, index, embedder, settings=settings, reads=reads)
    everything = HangingReads(
        ReadModelReads.over(MongoReadModelPorts(mongo_db, cipher)), {"bot", "persona", "recent_messages"}
    )
    tight = AssemblerSettings(read_timeout_s=60, deadline_s=0.3)
    try:
        reply = await ask(nc, request(tenant))
    finally:
        await broker.stop()
    broker = await start_assembler(nats_url, mongo_db, cipher, index, embedder, settings=tight, reads=everything)
    try:
        whole = await ask(nc, request(tenant))
    finally:
        await broker.stop()
    assert sorted(reply["degraded"]) == ["history", "knowledge", "memories"]
    assert [s["name"] for s in reply["sections"]] == ["system", "persona", "directive", "retrieved"]
    # Past the deadline nothing more is read: the parts read after the search are given up at once. The facts
    # are read from the start, alongside the profiles, so they came in time.
    assert set(whole["degraded"]) == {"bot_profile", "persona", "history", "memories", "retrieved"}
    assert [s["name"] for s in whole["sections"]] == ["system", "directive"]


async def test_the_fault_switch_stops_and_restarts_the_index(
    nats_url, mongo_db, cipher, index, embedder, nc, tenant, tmp_path
):
    switch = tmp_path / "vector_index.fault"
    await seed(mongo_db, cipher, index, embedder, tenant)
    settings = AssemblerSettings(history_limit=6, retrieval_timeout_s=0.3, fault_file=switch)
    broker = await start_assembler(nats_url, mongo_db, cipher, index, embedder, settings=settings)
    try:
        switch.write_text("hang")
        hung = await ask(nc, request(tenant))
        switch.write_text("down")
        down = await ask(nc, request(tenant))
        switch.unlink()
        back = await ask(nc, request(tenant))
    finally:
        await broker.stop()
    for reply in (hung, down):
        assert reply["degraded"] == ["vector_index"]
        assert [s["name"] for s in reply["sections"]] == ["system", "persona", "directive", "history"]
    assert back["degraded"] == []
    assert "retrieved" in [s["name"] for s in back["sections"]]


async def test_a_configured_tokenizer_counts_the_sections(nats_url, mongo_db, cipher, index, embedder, nc, tenant):
    """``MNEMO_CONTEXT_ASSEMBLER__TOKENIZER_FILE``: the bundled model's tokenizer.json stands in for an LLM's."""
    from mnemo.shared.embedders.bundled import tokenizer_path
    from mnemo.shared.tokens import HfTokenizerTokens

    await seed(mongo_db, cipher, index, embedder, tenant)
    settings = AssemblerSettings(history_limit=6, tokenizer_file=tokenizer_path())
    broker = await start_assembler(nats_url, mongo_db, cipher, index, embedder, settings=settings)
    try:
        reply = await ask(nc, request(tenant, max_tokens=200))
    finally:
        await broker.stop()
    counter = HfTokenizerTokens(tokenizer_path())
    assert all(s["tokens"] == counter.count(s["text"]) for s in reply["sections"])
    assert reply["token_count"] <= 200
