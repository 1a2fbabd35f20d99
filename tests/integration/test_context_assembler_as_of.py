"""The context as of an earlier message (``as_of_message_id``) over real NATS, SecantusDB read models, Qdrant
Edge and the bundled model: the history, the summaries, the retrieved messages and the facts are those the
log held at that message; an id the conversation does not hold is ``not_found``, in any tenant.

Seeded as ``test_context_assembler.py`` seeds, with the points' ``created_at`` the embedding service writes
(``mnemo/services/embedding/messages.py``, ``summaries.py``): the as-of cut filters on it inside the query.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from mnemo.shared.crypto import FieldCipher
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.events.envelope import deterministic_id
from mnemo.shared.events.recorded import EVERYONE, knowledge_stream, player_scope
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.readmodels.catalog import ensure_indexes
from mnemo.shared.readmodels.knowledge import KnowledgeReadModel
from mnemo.shared.readmodels.summaries import SummariesReadModel
from mnemo.shared.sparse import document_vector
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import VectorIndex, VectorPoint
from tests.integration.test_context_assembler import (
    BOT,
    CONV,
    LINES,
    T0,
    USER,
    ask,
    cast,
    env,
    message_events,
    request,
    start_assembler,
    summary_event,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def embedder() -> BundledEmbedder:
    return BundledEmbedder(batch_size=16)


SUMMARY = "Tobin found a silver key at the lighthouse."  # covers m0-m4
LATE_FACT = "Tobin hid the silver key inside the chapel bell."  # learned from m12


def fact_event(tenant: str) -> Any:
    at = T0 + timedelta(minutes=12)  # learned_at: the time of the message it came from
    payload = {"fact_id": deterministic_id("fact", tenant, "late"), "character_id": BOT, "character_kind": "bot",
               "user_id": USER, "conversation_id": CONV, "text": LATE_FACT, "subject": "key:place",
               "fact_type": "semantic", "confidence": 0.9, "learned_at": at, "scope": player_scope(USER),
               "message_ids": ["m12"], "method": "pattern"}  # fmt: skip
    return env(tenant, knowledge_stream(tenant, BOT), 1, "knowledge.fact_learned", payload)


async def seed(db: Any, cipher: FieldCipher, index: VectorIndex, embedder: Any, tenant: str) -> None:
    await ensure_indexes(db)
    messages = message_events(tenant, LINES)
    await ReadModels(db, cipher).apply([*cast(tenant), *messages])
    sid = deterministic_id("summary", tenant, "s1")
    await SummariesReadModel(db, cipher).apply([summary_event(tenant, sid, SUMMARY)])
    await KnowledgeReadModel(db, cipher).apply([fact_event(tenant)])
    texts = [m.payload["content"] for m in messages] + [SUMMARY]
    vectors = await embedder.embed(texts)
    scope = {"tenant_id": tenant, "user_id": USER, "conversation_id": CONV}
    points = [
        VectorPoint(
            deterministic_id("pt", tenant, m.payload["message_id"]),
            v,
            {
                **scope,
                "kind": "message",
                "message_id": m.payload["message_id"],
                "audience": [BOT],
                vp.CREATED_AT: (T0 + timedelta(minutes=i)).timestamp(),
            },
            document_vector(m.payload["content"]),
        )
        for i, (m, v) in enumerate(zip(messages, vectors, strict=False))
    ]
    summary_payload = {**scope, "kind": "summary", "summary_id": sid, "audience": [EVERYONE],
                       vp.CREATED_AT: (T0 + timedelta(minutes=4)).timestamp()}  # fmt: skip
    points.append(
        VectorPoint(deterministic_id("pt", tenant, sid), vectors[-1], summary_payload, document_vector(SUMMARY))
    )
    await index.upsert(points)


def ids(reply: dict[str, Any], kind: str, retrieved: bool) -> list[str]:
    return [s["id"] for s in reply["sources"] if s["kind"] == kind and (s["score"] is not None) == retrieved]


async def test_the_context_as_of_a_message_holds_only_what_the_log_held_then(
    nats_url, mongo_db, cipher, index, embedder, nc, tenant
):
    await seed(mongo_db, cipher, index, embedder, tenant)
    broker = await start_assembler(nats_url, mongo_db, cipher, index, embedder)
    try:
        now = await ask(nc, request(tenant))
        at_m3 = await ask(nc, request(tenant, as_of_message_id="m3"))
        at_m9 = await ask(nc, request(tenant, as_of_message_id="m9"))
    finally:
        await broker.stop()

    assert "error" not in at_m3
    assert "error" not in at_m9
    assert LATE_FACT in now["context"], "known now"
    assert SUMMARY in now["context"], "known now"
    assert ids(at_m3, "message", retrieved=False) == ["m0", "m1", "m2", "m3"], "the history ends with m3"
    assert SUMMARY not in at_m3["context"], "its messages run to m4, after m3"
    assert LATE_FACT not in at_m3["context"]
    assert ids(at_m9, "message", retrieved=False) == [f"m{i}" for i in range(4, 10)]
    assert SUMMARY in at_m9["context"], "written of m0-m4: known at m9"
    assert LATE_FACT not in at_m9["context"], "learned from m12"
    assert all(int(i[1:]) <= 9 for i in ids(at_m9, "message", retrieved=True)), "nothing retrieved from later"
    assert "silver key" in at_m9["context"]


async def test_an_id_the_conversation_does_not_hold_is_not_found_in_any_tenant(
    nats_url, mongo_db, cipher, index, embedder, nc, tenant
):
    other = f"{tenant}-other"  # holds the same conversation and message ids
    await seed(mongo_db, cipher, index, embedder, other)
    broker = await start_assembler(nats_url, mongo_db, cipher, index, embedder)
    try:
        replies = [
            await ask(nc, request(tenant, as_of_message_id="m3")),  # the other tenant's message id
            await ask(nc, request(other, as_of_message_id="m99")),
            await ask(nc, request(other, as_of_message_id="m3", conversation_id="c2")),
            await ask(nc, request(other, as_of_message_id="m3", user_id="u2")),
        ]
        own = await ask(nc, request(other, as_of_message_id="m3"))
    finally:
        await broker.stop()

    for reply in replies:
        assert set(reply) == {"error"}, reply
        assert reply["error"]["code"] == "not_found"
        assert "lighthouse" not in reply["error"]["message"]
    assert "lighthouse" in own["context"], "the same request in the tenant that holds it works"
