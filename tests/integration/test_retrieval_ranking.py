"""Re-ranked retrieval over NATS with the real index (Qdrant Edge), read models and model: a question naming
a date or a participant brings that day's or that person's message first, and the scores are relevances."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from mnemo.services.context_assembler.settings import AssemblerSettings
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.events.envelope import EventEnvelope, deterministic_id
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.readmodels.catalog import ensure_indexes
from mnemo.shared.sparse import document_vector
from mnemo.shared.vectors.port import VectorIndex, VectorPoint
from tests.integration.test_context_assembler import (
    BOT,
    CONV,
    T0,
    USER,
    ask,
    request,
    scene_message,
    start_assembler,
)


@pytest.fixture(scope="module")
def embedder() -> BundledEmbedder:
    return BundledEmbedder(batch_size=16)


# (author, text, days after T0): the dated and the named message are not the best word matches.
LINES = [
    ("Tobin", "I bought fresh bread and milk at the market today.", 0),
    ("Mirelle", "I bought a spyglass at the market once, long ago.", 1),
    ("Tobin", "Picked up a brass lamp for my cabin.", 5),
    ("Mirelle", "I collect old star charts and polish my compass on quiet evenings.", 6),
    ("Tobin", "Climbing the rigging is what I love most, and whittling small boats.", 7),
    ("Mirelle", "We bought rope, tar and nails at the market for repairs.", 8),
    ("Tobin", "Filler line one.", 9),
    ("Mirelle", "Filler line two.", 9),
]


def events(tenant: str) -> list[EventEnvelope]:
    return [
        scene_message(
            tenant,
            i,
            "assistant" if author == "Mirelle" else "user",
            author,
            text,
            T0 + timedelta(days=days, minutes=i),
        )
        for i, (author, text, days) in enumerate(LINES)
    ]


async def seed(db: Any, cipher: Any, index: VectorIndex, embedder: BundledEmbedder, tenant: str) -> None:
    models = ReadModels(db, cipher)
    await ensure_indexes(db)
    messages = events(tenant)
    await models.apply(messages)
    vectors = await embedder.embed([m.payload["content"] for m in messages])
    await index.upsert(
        [
            VectorPoint(
                deterministic_id("pt", tenant, m.payload["message_id"]),
                v,
                {
                    "tenant_id": tenant,
                    "user_id": USER,
                    "conversation_id": CONV,
                    "kind": "message",
                    "message_id": m.payload["message_id"],
                    "audience": [BOT],
                    "index": m.payload["index"],
                    "created_at": m.payload["created_at"].timestamp(),
                },
                document_vector(m.payload["content"]),
            )
            for m, v in zip(messages, vectors, strict=True)
        ]
    )


async def retrieved(
    nats_url: str, db: Any, cipher: Any, index: Any, embedder: Any, nc: Any, tenant: str, q: str
) -> list[str]:
    settings = AssemblerSettings(history_limit=2, min_history=2, retrieved_limit=4, min_score=0.0)
    broker = await start_assembler(nats_url, db, cipher, index, embedder, settings=settings)
    try:
        reply = await ask(nc, request(tenant, user_message=q, persona_id=None))
    finally:
        await broker.stop()
    # No bot or persona records are seeded (named as degraded); the search itself must have worked.
    assert set(reply["degraded"]) <= {"bot_profile", "persona"}
    scored = [s for s in reply["sources"] if s["kind"] == "message" and s["score"] is not None]
    assert all(0.0 < s["score"] <= 1.0 for s in scored)
    return [s["id"] for s in sorted(scored, key=lambda s: -s["score"])]


async def test_the_day_a_question_names_comes_first(nats_url, mongo_db, cipher, index, embedder, nc, tenant):
    await seed(mongo_db, cipher, index, embedder, tenant)
    day = (T0 + timedelta(days=5)).strftime("%d %b %Y")  # the brass lamp's day
    ranked = await retrieved(nats_url, mongo_db, cipher, index, embedder, nc, tenant, f"What did I buy on {day}?")
    assert ranked[0] == "m2"


async def test_the_participant_a_question_names_comes_first(nats_url, mongo_db, cipher, index, embedder, nc, tenant):
    await seed(mongo_db, cipher, index, embedder, tenant)
    ranked = await retrieved(
        nats_url, mongo_db, cipher, index, embedder, nc, tenant, "What are Tobin's hobbies in the evenings?"
    )
    assert ranked[0] == "m4"  # Tobin's own message, over Mirelle's closer wording
