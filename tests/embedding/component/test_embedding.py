"""The embedding service's handler on the in-memory log and read models, with Qdrant Edge in a temporary folder
(the real engine, in process) and the bundled model: what gets indexed, updated and removed.

Events reach ``EmbeddingHandler.on_log_batch`` as the relay would deliver them, after ingest (here: the
in-memory read models) has projected them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mnemo.services.embedding.app import chunk_strings
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import conversation_stream, summary_stream
from mnemo.shared.vectors.edge import EdgeVectorIndex
from mnemo.shared.vectors.points import point_id
from mnemo.shared.vectors.port import VectorFilter, VectorQuery
from tests.components import Reads, edge_index, items
from tests.envelopes import message_recorded, recorded

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
T, U, C = "t1", "u1", "c1"
CONV = conversation_stream(T, U, C)
LONG = " ".join(
    f"Paragraph {i}: the caravan crossed the salt flats at dawn, and the guide counted the wells twice."
    for i in range(12)
)


class Embedding:
    def __init__(self, index: EdgeVectorIndex, embedder: BundledEmbedder) -> None:
        self.index = index
        self.embedder = embedder
        reads = Reads()
        self.models = reads.models
        self.summaries = reads.summaries
        self.handler = reads.embedding_handler(index, embedder)

    async def deliver(self, events: list[EventEnvelope]) -> None:
        """Project (as ingest and the summarizer do before the relay publishes), then index."""
        await self.models.apply(events)
        await self.summaries.apply(events)
        assert await self.handler.on_log_batch(items(events)) == []

    async def search(self, text: str, tenant: str = T, n: int = 3) -> list[str]:
        [query] = await self.embedder.embed([text])
        return [
            str(h.payload["source_id"])
            for h in await self.index.search(VectorQuery.dense(query, VectorFilter.where(tenant_id=tenant), n))
        ]


@pytest.fixture
async def embedding(tmp_path, embedder):
    async with edge_index(tmp_path, embedder) as index:
        yield Embedding(index, embedder)


def line(i: int, content: str, **kw) -> EventEnvelope:
    return message_recorded(T, U, C, i, content, created_at=T0 + timedelta(minutes=i), bot_ids=["eli"], **kw)


def of_message(message_id: str) -> VectorFilter:
    return VectorFilter.where(tenant_id=T, user_id=U, conversation_id=C, message_id=message_id)


async def test_messages_are_chunked_and_found_by_meaning(embedding):
    await embedding.deliver([
        line(0, "The dragon sleeps under the old mill."),
        line(1, LONG, role="assistant"),
        line(2, "Tomorrow we sail to the islands."),
        line(3, "   "),
    ])  # fmt: skip

    assert await embedding.index.count(of_message("m0")) == 1
    assert await embedding.index.count(of_message("m1")) == len(chunk_strings(LONG)) > 1
    assert await embedding.index.count(of_message("m3")) == 0, "nothing to embed"
    assert (await embedding.search("Where is the dragon sleeping?"))[0] == "m0"
    assert (await embedding.search("When do we take the boat?"))[0] == "m2"
    assert await embedding.search("dragon", tenant="t2") == []
    [point] = await embedding.index.retrieve([point_id("message", T, U, C, "m0", 0)])
    assert (point.payload["kind"], point.payload["bot_ids"], point.payload["index"]) == ("message", ["eli"], 0)
    assert "dragon" not in str(point.payload), "no user text in the index payload"


async def test_redelivery_indexes_nothing_twice(embedding):
    events = [line(0, "The dragon sleeps under the old mill."), line(1, LONG)]
    await embedding.deliver(events)
    total = await embedding.index.count(VectorFilter.where(tenant_id=T))

    await embedding.deliver(events)

    assert await embedding.index.count(VectorFilter.where(tenant_id=T)) == total


async def test_edits_replace_and_deletes_remove_a_messages_vectors(embedding):
    await embedding.deliver([line(0, "The dragon sleeps under the old mill."), line(1, LONG)])
    edit = recorded(T, CONV, 3, "message.edited", {"user_id": U, "conversation_id": C, "message_id": "m1",
                    "content": "A short edited line about apples.", "edited_at": T0 + timedelta(hours=1), "tokens": 7}, T0)  # fmt: skip
    gone = recorded(T, CONV, 4, "message.deleted", {"user_id": U, "conversation_id": C, "message_id": "m0",
                    "deleted_at": T0 + timedelta(hours=2)}, T0)  # fmt: skip

    await embedding.deliver([edit, gone])
    await embedding.deliver([line(0, "The dragon sleeps under the old mill.")])  # a late redelivery

    assert await embedding.index.count(of_message("m0")) == 0, "a deleted message stays out of the index"
    assert await embedding.index.count(of_message("m1")) == 1, "the old chunks are gone"
    assert (await embedding.search("apples"))[0] == "m1"


async def test_a_summary_is_indexed_and_removed_when_retired(embedding):
    sums = summary_stream(T, U, C)
    created = recorded(T, sums, 1, "summary.created", {
        "summary_id": "s1", "user_id": U, "conversation_id": C, "summary_type": "short_term",
        "text": "The party agreed to meet the smuggler at the lighthouse.", "importance": 5,
        "participants": ["eli"], "start_at": T0, "end_at": T0 + timedelta(minutes=5), "message_ids": ["m0", "m1"],
        "first_index": 0, "last_index": 1, "method": "extractive"}, T0)  # fmt: skip
    retired = recorded(T, sums, 2, "summary.retired", {"summary_id": "s1", "user_id": U, "conversation_id": C,
                       "reason": "deleted", "retired_at": T0 + timedelta(hours=1)}, T0)  # fmt: skip
    of_summary = VectorFilter.where(tenant_id=T, kind="summary")

    await embedding.deliver([created])
    found = await embedding.search("Where do we meet the smuggler?")
    await embedding.deliver([retired])
    await embedding.deliver([created])  # a late redelivered creation

    assert found == ["s1"]
    assert await embedding.index.count(of_summary) == 0
