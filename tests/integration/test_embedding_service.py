"""The embedding service on real NATS and SecantusDB, with Qdrant Edge on disk and the bundled model.

Ingest runs beside it, so the chain under test is the product's: nats-py publishes chat events, ingest
records them and the relay publishes the log events, the embedding service indexes them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from mnemo.services.embedding.app import chunk_strings
from mnemo.services.embedding.app import create_router as embedding_router
from mnemo.services.embedding.handlers import EmbeddingHandler
from mnemo.services.ingest.app import create_router as ingest_router
from mnemo.shared import subjects
from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore
from mnemo.shared.delivery import DLQ_REASON, Item
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.embedders.port import EmbedderUnavailable, WrappedEmbedder
from mnemo.shared.events.envelope import EventEnvelope, NewEvent
from mnemo.shared.events.recorded import conversation_stream, summary_stream
from mnemo.shared.partitions import ingest_drained
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.sparse import query_vector
from mnemo.shared.vectors.edge import EdgeVectorIndex
from mnemo.shared.vectors.points import point_id
from mnemo.shared.vectors.port import Match, VectorFilter, VectorQuery
from tests.envelopes import recorded
from tests.integration.ingest_stack import Stack, StackFactory, dead_letters, drained, message_created
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
EMBEDDING = subjects.durable("embedding")
LONG = " ".join(
    f"Paragraph {i}: the caravan crossed the salt flats at dawn, and the guide counted the wells twice."
    for i in range(40)
)
MESSAGE_FIELDS = {
    "tenant_id",
    "user_id",
    "conversation_id",
    "message_id",
    "audience",
    "kind",
    "source_id",
    "bot_ids",
    "persona_id",
    "author_id",
    "role",
    "index",
    "created_at",
    "chunk",
    "model",
    "analyzer",
}


@pytest.fixture
async def stack(vector_stack: StackFactory) -> AsyncIterator[Stack]:
    async with vector_stack([ingest_router, embedding_router]) as s:
        yield s


def message(message_id: str, minute: int, content: str, **extra: Any) -> dict[str, Any]:
    return message_created(message_id, content, T0 + timedelta(minutes=minute), **{"persona_id": "knight", **extra})


async def chat(stack: Stack, subject: str, body: dict[str, Any]) -> None:
    await stack.js.publish(subject, json.dumps(body).encode())


async def settle(stack: Stack) -> None:
    await wait_until(lambda: ingest_drained(stack.js), "ingest acked every chat message")
    await wait_until(lambda: drained(stack.js, subjects.LOG_STREAM, EMBEDDING), "embedding acked every log event")


def of_message(message_id: str) -> VectorFilter:
    return VectorFilter.where(tenant_id="t1", user_id="u1", conversation_id="c1", message_id=message_id)


async def test_messages_are_chunked_embedded_edited_and_deleted(stack: Stack, embedder: BundledEmbedder) -> None:
    index = stack.deps.require_vectors()
    await chat(stack, subjects.MESSAGE_CREATED, message("m1", 0, "The dragon sleeps under the old mill."))
    await chat(stack, subjects.MESSAGE_CREATED, message("m2", 1, LONG, role="assistant", author_id="eli"))
    await chat(stack, subjects.MESSAGE_CREATED, message("m3", 2, "   "))
    await settle(stack)

    assert len(chunk_strings(LONG)) > 1
    assert await index.count(of_message("m1")) == 1
    assert await index.count(of_message("m2")) == len(chunk_strings(LONG))
    assert await index.count(of_message("m3")) == 0  # nothing to embed

    [m1] = await index.retrieve([point_id("message", "t1", "u1", "c1", "m1", 0)])
    assert set(m1.payload) == MESSAGE_FIELDS
    assert m1.payload["kind"] == "message"
    assert (m1.payload["source_id"], m1.payload["chunk"], m1.payload["index"]) == ("m1", 0, 0)
    assert (m1.payload["bot_ids"], m1.payload["persona_id"], m1.payload["role"]) == (["eli"], "knight", "user")
    assert m1.payload["created_at"] == T0.timestamp()
    assert m1.payload["model"] == embedder.model_id
    assert "dragon" not in json.dumps(
        [p.payload for p in await index.search(VectorQuery.dense([1.0] * 384, VectorFilter(), 100))]
    )

    [query] = await embedder.embed(["Where is the dragon sleeping?"])
    hits = await index.search(VectorQuery.dense(query, VectorFilter.where(tenant_id="t1", kind="message"), 1))
    assert hits[0].payload["message_id"] == "m1"
    assert await index.search(VectorQuery.dense(query, VectorFilter.where(tenant_id="t2"), 5)) == []
    # Each chunk also carries its lexical vector: a word match comes back through the hybrid search.
    far = [0.0] * 383 + [1.0]
    lexical_hits = await index.hybrid_search(
        VectorQuery(far, query_vector("dragon"), VectorFilter.where(tenant_id="t1"), 100)
    )
    assert lexical_hits[0].payload["message_id"] == "m1"

    ids = {"tenant_id": "t1", "user_id": "u1", "conversation_id": "c1"}
    edit = ids | {"message_id": "m2", "content": "A short edited line.", "edited_at": T0.isoformat()}
    await chat(stack, subjects.MESSAGE_EDITED, edit)
    await chat(stack, subjects.MESSAGE_DELETED, ids | {"message_id": "m1", "deleted_at": T0.isoformat()})
    await settle(stack)

    assert await index.count(of_message("m1")) == 0
    [m2] = await index.retrieve([point_id("message", "t1", "u1", "c1", "m2", 0)])
    assert await index.count(of_message("m2")) == 1  # the old chunks 1..n are gone
    assert (m2.payload["role"], m2.payload["index"], m2.payload["bot_ids"]) == ("assistant", 1, ["eli"])

    # A late redelivery of m1's original event must not bring the deleted message back.
    [recorded_m1] = await stack.store.read_stream(conversation_stream("t1", "u1", "c1"), limit=1)
    wire = stack.codec.to_wire(await stack.codec.encode(recorded_m1))
    await stack.js.publish(subjects.log_subject("message.recorded"), wire)  # no Nats-Msg-Id: not deduplicated
    await settle(stack)
    assert await index.count(of_message("m1")) == 0


async def test_summaries_are_indexed_with_their_message_ids(stack: Stack) -> None:
    index = stack.deps.require_vectors()
    payload = {
        "summary_id": "s1",
        "user_id": "u1",
        "conversation_id": "c1",
        "summary_type": "short_term",
        "text": "The party agreed to meet the smuggler at the lighthouse.",
        "importance": 5,
        "participants": ["eli", "knight"],
        "start_at": T0.isoformat(),
        "end_at": (T0 + timedelta(minutes=5)).isoformat(),
        "message_ids": ["m1", "m2"],
        "first_index": 0,
        "last_index": 1,
        "method": "extractive",
    }
    event = NewEvent(type="summary.created", tenant_id="t1", payload=payload)
    result = await stack.store.append(summary_stream("t1", "u1", "c1"), 0, [event])
    await stack.relay.publish_committed(result.committed)
    await settle(stack)

    flt = VectorFilter.where(tenant_id="t1", user_id="u1", conversation_id="c1", kind="summary")
    assert await index.count(flt) == 1
    [point] = await index.retrieve([point_id("summary", "t1", "u1", "c1", "s1", 0)])
    assert point.payload["message_ids"] == ["m1", "m2"]
    assert (point.payload["source_id"], point.payload["summary_id"]) == ("s1", "s1")
    assert "lighthouse" not in json.dumps(point.payload)
    assert await index.count(flt.and_(Match("message_ids", ("m2",)))) == 1


async def test_types_it_does_not_handle_never_reach_it_and_a_damaged_event_is_dead_lettered(stack: Stack) -> None:
    index = stack.deps.require_vectors()
    alien = {
        "event_id": "e-alien",
        "type": "spell.cast",
        "schema_version": 1,
        "stream_id": "spell/t1/x",
        "version": 1,
        "tenant_id": "t1",
        "occurred_at": T0.isoformat(),
        "recorded_at": T0.isoformat(),
        "payload": {},
    }
    # A type it does not know (a newer version's, during an upgrade): not in its durable's filter, never delivered.
    await stack.js.publish(subjects.log_subject("spell.cast"), json.dumps(alien).encode())
    await stack.js.publish(subjects.log_subject("message.recorded"), b"{not json")  # handled type, damaged body
    bot = {"tenant_id": "t1", "bot_id": "eli", "name": "Eli", "system_prompt": "Be kind.", "updated_at": T0.isoformat()}
    await chat(stack, subjects.BOT_UPSERTED, bot)  # bot.recorded: not the embedding service's business
    await chat(stack, subjects.MESSAGE_CREATED, message("m1", 0, "After the noise, a real message."))
    await settle(stack)

    [letter] = await dead_letters(stack.js, "embedding")
    assert "not JSON" in (letter.headers or {}).get(DLQ_REASON, "")
    assert await index.count(VectorFilter.where(tenant_id="t1")) == 1
    durable = await stack.js.consumer_info(subjects.LOG_STREAM, EMBEDDING)
    assert durable.delivered.consumer_seq == 2, "the damaged message and the real one; not the alien, nor the bot"


async def test_a_staged_batch_writes_its_vectors_only_in_its_completion(tmp_path: Path, mongo_db: Any) -> None:
    """The consumer embeds the next batch while this one's completion writes: nothing may reach the index in
    the first stage, or a later batch's deletions could overtake an earlier batch's upserts."""
    embedder = BundledEmbedder()
    index = EdgeVectorIndex(tmp_path, "staged")
    await index.ensure_collection(embedder.dimensions)
    try:
        handler = EmbeddingHandler(
            index, embedder, ReadModels(mongo_db, FieldCipher(bytes(32), InMemoryKeyStore())), chunk_strings
        )
        payload = {**message("m1", 0, "The lighthouse keeper lit the lamp."), "created_at": T0, "index": 0}
        payload.pop("tenant_id")
        payload["tokens"] = 8
        event = recorded("t1", conversation_stream("t1", "u1", "c1"), 1, "message.recorded", payload, T0)
        finish = await handler.begin([Item(event, None)])  # type: ignore[arg-type]  # msg is only read on rejection
        assert await index.count(of_message("m1")) == 0, "the first stage only plans and embeds"
        assert list(await finish()) == []
        assert await index.count(of_message("m1")) == 1
    finally:
        await index.close()


class GatedEmbedder(WrappedEmbedder):
    """The real model behind a gate the test opens, recording which texts reached it in which order."""

    def __init__(self, inner: BundledEmbedder) -> None:
        super().__init__(inner)
        self.gate = asyncio.Event()
        self.called = asyncio.Event()  # set once the model is first asked
        self.calls: list[list[str]] = []
        self.fail_next = False

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.called.set()
        await self.gate.wait()
        self.calls.append(list(texts))
        if self.fail_next:
            self.fail_next = False
            raise EmbedderUnavailable("the model went away")
        return await self.inner.embed(texts)


def recorded_message(message_id: str, version: int, content: str) -> EventEnvelope:
    payload = {**message(message_id, version, content), "created_at": T0, "index": version}
    payload.pop("tenant_id")
    payload["tokens"] = 8
    return recorded("t1", conversation_stream("t1", "u1", "c1"), version, "message.recorded", payload, T0)


async def test_the_next_batch_begins_while_the_model_embeds_this_one_and_batches_reach_it_in_order(
    tmp_path: Path, mongo_db: Any
) -> None:
    """The first stage plans and hands the batch to the model without waiting for it, so the consumer fetches and
    plans the next batch meanwhile; the model still gets the batches one after the other, in delivery order."""
    embedder = GatedEmbedder(BundledEmbedder())
    index = EdgeVectorIndex(tmp_path, "overlap")
    await index.ensure_collection(embedder.dimensions)
    try:
        handler = EmbeddingHandler(
            index, embedder, ReadModels(mongo_db, FieldCipher(bytes(32), InMemoryKeyStore())), chunk_strings
        )
        begin = asyncio.ensure_future(
            handler.begin([Item(recorded_message("m1", 1, "The lighthouse keeper lit the lamp."), None)])  # type: ignore[arg-type]
        )
        asked = asyncio.ensure_future(embedder.called.wait())
        await asyncio.wait({begin, asked}, return_when=asyncio.FIRST_COMPLETED)
        embedder.gate.set()  # whatever happened, nothing waits on the gate from here
        assert begin.done(), "the first stage waited for the model"
        first = await begin
        second = await handler.begin([Item(recorded_message("m2", 2, "A gull landed on the rail."), None)])  # type: ignore[arg-type]
        assert list(await first()) == []
        assert list(await second()) == []
        assert embedder.calls == [["The lighthouse keeper lit the lamp."], ["A gull landed on the rail."]]
        assert await index.count(of_message("m1")) == 1
        assert await index.count(of_message("m2")) == 1
    finally:
        await index.close()


async def test_a_failed_embedding_fails_its_batch_completion_and_writes_nothing(tmp_path: Path, mongo_db: Any) -> None:
    """The model fails in the background: the batch's completion raises (so the consumer retries the batch and
    acks none of it), nothing of it reaches the index, and the batch begun after it still embeds."""
    embedder = GatedEmbedder(BundledEmbedder())
    embedder.fail_next = True
    embedder.gate.set()
    index = EdgeVectorIndex(tmp_path, "failed")
    await index.ensure_collection(embedder.dimensions)
    try:
        handler = EmbeddingHandler(
            index, embedder, ReadModels(mongo_db, FieldCipher(bytes(32), InMemoryKeyStore())), chunk_strings
        )
        failing = await handler.begin([Item(recorded_message("m1", 1, "The lighthouse keeper lit the lamp."), None)])  # type: ignore[arg-type]
        after = await handler.begin([Item(recorded_message("m2", 2, "A gull landed on the rail."), None)])  # type: ignore[arg-type]
        with pytest.raises(EmbedderUnavailable):
            await failing()
        assert await index.count(of_message("m1")) == 0
        assert list(await after()) == []
        assert await index.count(of_message("m2")) == 1
    finally:
        await index.close()
