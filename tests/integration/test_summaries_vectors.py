"""Summary vectors follow the summaries: the summarizer's events (real log in SecantusDB) projected by the
embedding handler into Qdrant Edge on disk with the bundled model. Points carry the audience, so the filter
the context-assembler uses (``audience`` contains the bot or ``*``) keeps an absent character's summaries out;
retired summaries leave the index, and a late redelivered creation of a retired summary stays out."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from mnemo.services.embedding.app import chunk_strings
from mnemo.services.embedding.handlers import EmbeddingHandler
from mnemo.services.summarizer.handlers import Summarizer
from mnemo.services.summarizer.settings import SummarizerSettings
from mnemo.shared.aggregates.summaries import fold_live
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.eventlog.save import EventSaver
from mnemo.shared.events.envelope import NewEvent
from mnemo.shared.events.recorded import conversation_stream, summary_stream
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.readmodels.summaries import SummariesReadModel
from mnemo.shared.vectors.edge import EdgeVectorIndex
from mnemo.shared.vectors.points import point_id
from mnemo.shared.vectors.port import Match, VectorFilter, VectorQuery
from tests.integration.event_log import event_log, items

pytestmark = pytest.mark.integration
T0 = datetime(2026, 3, 1, tzinfo=UTC)
CONV = conversation_stream("t1", "u1", "c1")
SUMS = summary_stream("t1", "u1", "c1")
SUMMARY_POINTS = VectorFilter.where(tenant_id="t1", user_id="u1", conversation_id="c1", kind="summary")


def recorded(i: int) -> NewEvent:
    bots = ["bard", "rook"] if i < 30 else ["bard"]  # the rook leaves at message 30
    text = "The rook guarded the gate." if i < 30 else "The bard whispered the password: juniper."
    return NewEvent(
        type="message.recorded",
        tenant_id="t1",
        payload={
            "user_id": "u1", "conversation_id": "c1", "message_id": f"m{i}", "role": "user",
            "author_id": None, "author_name": "Ana", "content": f"{text} Turn {i}.",
            "created_at": T0 + timedelta(minutes=i), "bot_ids": bots, "persona_id": None, "index": i, "tokens": 9,
        },
    )  # fmt: skip


@pytest.fixture
async def world(mongo_db: Any, nats_url: str, tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    async with event_log(mongo_db, nats_url) as log:
        embedder = BundledEmbedder()
        index = EdgeVectorIndex(tmp_path, "vectors")
        await index.ensure_collection(embedder.dimensions)
        summaries = SummariesReadModel(mongo_db, log.cipher)
        yield {
            "query": (await embedder.embed(["the password at the gate"]))[0],
            "store": log.store,
            "index": index,
            "summaries": summaries,
            "summarizer": Summarizer(
                log.store,
                EventSaver(log.store, log.relay),
                embedder,
                summaries,
                SummarizerSettings(first_at=5, every=10, max_active=2, consolidate_batch=2),
            ),
            "embedding": EmbeddingHandler(index, embedder, ReadModels(mongo_db, log.cipher), chunk_strings, summaries),
        }
        await index.close()


async def summary_ids(index: EdgeVectorIndex, query: list[float], flt: VectorFilter) -> set[str]:
    return {str(p.payload["summary_id"]) for p in await index.search(VectorQuery.dense(query, flt, 100))}


async def test_summary_points_follow_audience_and_retirement(world):
    store, index, summarizer, embedding = world["store"], world["index"], world["summarizer"], world["embedding"]
    await store.append(CONV, 0, [recorded(i) for i in range(45)])
    await summarizer.on_batch(items(await store.read_stream(CONV)))
    log = await store.read_stream(SUMS)
    await summarizer.on_batch(items(log))  # the read model
    await embedding.project(log)

    live = fold_live(log).summaries()
    assert any(e.type == "summary.retired" for e in log), "consolidation retired some summaries"
    query = world["query"]
    stored = await summary_ids(index, query, SUMMARY_POINTS)
    assert stored == {s.summary_id for s in live}, "exactly the live summaries are searchable"

    secret = {s.summary_id for s in live if any(int(m[1:]) >= 30 for m in s.message_ids)}
    assert secret, "some live summary covers what was said after the rook left"
    rook = await summary_ids(index, query, SUMMARY_POINTS.and_(Match("audience", ("rook", "*"))))
    bard = await summary_ids(index, query, SUMMARY_POINTS.and_(Match("audience", ("bard", "*"))))
    assert rook, "the rook remembers the first part"
    assert not rook & secret, "the rook is never shown a summary of what it did not witness"
    assert secret <= bard
    for s in live:
        [point] = await index.retrieve([point_id("summary", "t1", "u1", "c1", s.summary_id, 0)])
        assert point.payload["audience"] == s.audience
        assert point.payload["summary_type"] == s.summary_type

    # A late redelivered creation of a retired summary does not come back.
    first_created = next(e for e in log if e.type == "summary.created")
    assert first_created.payload["summary_id"] not in stored
    await embedding.project([first_created])
    assert await index.count(SUMMARY_POINTS.and_(Match("summary_id", (first_created.payload["summary_id"],)))) == 0
