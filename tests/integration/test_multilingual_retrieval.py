"""A message in a script without spaces is found by a query for a word inside it, through the real pipeline:
the message events go through the read models and the embedding service's handler (the real analyzer and
model) into Qdrant Edge, and the question through the context-assembler over NATS."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mnemo.services.embedding.app import chunk_strings
from mnemo.services.embedding.handlers import EmbeddingHandler
from mnemo.shared.analyzer import ANALYZER_VERSION
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.readmodels.catalog import ensure_indexes
from mnemo.shared.vectors.port import VectorFilter
from tests.integration.test_context_assembler import T0, ask, request, scene_message, start_assembler

pytestmark = pytest.mark.integration

LINES = [
    ("user", "Tobin", "然后我们去玄天宗拜访。"),  # m0: the evidence in Chinese
    ("assistant", "Mirelle", "昨日、東京タワーに行きました。"),  # m1: in Japanese
    ("user", "Tobin", "어제 서울에서 친구를 만났어요."),  # m2: in Korean
    ("assistant", "Mirelle", "Un café à Zürich, s'il vous plaît."),  # m3: accents
] + [
    ("user" if i % 2 == 0 else "assistant", "Tobin" if i % 2 == 0 else "Mirelle", f"今天天气很好，第{i}次聊天。")
    for i in range(4, 14)
]


@pytest.mark.parametrize(
    ("question", "found"),
    [("玄天宗在哪里？", "m0"), ("東京タワー", "m1"), ("서울", "m2"), ("cafe in zurich", "m3")],
)
async def test_a_word_inside_a_message_finds_it(
    nats_url, mongo_db, cipher, index, embedder, nc, tenant, question: str, found: str
):
    events = [scene_message(tenant, i, r, n, t, T0 + timedelta(minutes=i)) for i, (r, n, t) in enumerate(LINES)]
    read_models = ReadModels(mongo_db, cipher)
    await ensure_indexes(mongo_db)
    await read_models.apply(events)
    await EmbeddingHandler(index, embedder, read_models, chunk_strings).project(events)
    points = await index.count(VectorFilter.where(tenant_id=tenant, analyzer=ANALYZER_VERSION))
    assert points == len(LINES), "every point records the analyzer that made its lexical vector"
    # min_score 0.99 shuts the dense side (the bundled model is English-only): only the lexical match can
    # bring the message back, and only if the analyzer cut the sentence into the question's terms.
    broker = await start_assembler(nats_url, mongo_db, cipher, index, embedder, min_score=0.99)
    try:
        reply = await ask(nc, request(tenant, user_message=question))
    finally:
        await broker.stop()
    # No bot or persona was recorded (not this test's subject); the search itself must not be degraded.
    assert set(reply["degraded"]) == {"bot_profile", "persona"}
    retrieved = {s["id"]: s["score"] for s in reply["sources"] if s["kind"] == "message" and s["score"] is not None}
    assert retrieved, reply["sources"]
    assert max(retrieved, key=lambda k: retrieved[k]) == found
