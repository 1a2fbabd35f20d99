"""A swipe moves a message's vectors: ingest, embedding and the context-assembler chained in memory (Qdrant Edge,
the bundled model). An old message out of the history window is found by the meaning of its current alternative
only; selecting the original back brings the original's meaning back."""

from __future__ import annotations

import json
from datetime import timedelta

from mnemo.services.ingest.handlers import decode_command
from mnemo.shared import subjects
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import VectorQuery
from tests.components import items, published
from tests.context_assembler.component.test_retrieval import DRAGON, FILLER, T0, C, T, U, chain, record, request

__all__ = ["chain"]  # the fixture
CAVES = "The dragon sleeps in the northern caves, coiled around a frozen lake."


async def deliver(chain, subject: str, body: dict) -> None:
    ingest, embedding, _, d = chain
    assert await ingest.on_chat_batch(items([decode_command(subject, json.dumps(body).encode())])) == []
    assert await embedding.on_log_batch(items(published(d).take())) == []


async def retrieved(chain) -> str:
    reply = await chain[2](subjects.CONTEXT_ASSEMBLE, request("ada"))
    assert "error" not in reply
    return next((s["text"] for s in reply["sections"] if s["name"] == "retrieved"), "")


async def closeness(chain, embedder, text: str) -> float:
    """How close the message's vectors are to ``text`` (1.0: they are its embedding)."""
    [vector] = await embedder.embed([text])
    hits = await chain[3].vectors.search(VectorQuery.dense(vector, vp.messages_by_id(T, U, C, ["m0"]), 1, None))
    return hits[0].score


async def test_only_the_current_alternative_is_found_by_meaning(chain, embedder):
    await record(chain, [(DRAGON, ["ada"])] + [(line, ["ada"]) for line in FILLER])
    assert DRAGON in await retrieved(chain)
    assert await closeness(chain, embedder, DRAGON) > 0.99

    swipe = {"tenant_id": T, "user_id": U, "conversation_id": C, "message_id": "m0-b", "role": "user",
             "author_name": "Mira", "content": CAVES, "created_at": (T0 + timedelta(hours=1)).isoformat(),
             "bot_ids": ["ada"], "swipe_of": "m0"}  # fmt: skip
    await deliver(chain, subjects.MESSAGE_CREATED, swipe)
    found = await retrieved(chain)
    assert CAVES in found
    assert "old mill" not in found
    assert await closeness(chain, embedder, CAVES) > 0.99, "the message's vectors are the swipe's"
    assert await closeness(chain, embedder, DRAGON) < 0.95

    selected = {"tenant_id": T, "user_id": U, "conversation_id": C, "message_id": "m0",
                "selected_at": (T0 + timedelta(hours=2)).isoformat()}  # fmt: skip
    await deliver(chain, subjects.MESSAGE_SWIPE_SELECTED, selected)
    found = await retrieved(chain)
    assert DRAGON in found
    assert "northern caves" not in found
    assert await closeness(chain, embedder, DRAGON) > 0.99
