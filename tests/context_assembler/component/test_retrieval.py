"""Ingest, embedding and the context-assembler chained in memory (Qdrant Edge in a temporary folder, the bundled
model, ``TestNatsBroker`` for the request): an old message out of the history window comes back by meaning.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mnemo.services.ingest.handlers import decode_command
from mnemo.shared import subjects
from mnemo.shared.sparse import term_id, tokens
from mnemo.shared.vectors.port import VectorIndex
from tests.components import DRAGON, FILLER, Rpc, deps, edge_index, items, published, retrieval_chain

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
T, U, C = "t1", "u1", "c1"


@pytest.fixture
async def chain(tmp_path, embedder):
    async with edge_index(tmp_path, embedder) as index:
        d = deps(vectors=index, embedder=embedder)
        async with retrieval_chain(d, index, embedder, history_limit=4) as (ingest, embedding, broker):
            yield ingest, embedding, Rpc(broker), d


def created(i: int, content: str, bots: list[str]) -> bytes:
    return json.dumps({
        "tenant_id": T, "user_id": U, "conversation_id": C, "message_id": f"m{i}", "role": "user",
        "author_name": "Mira", "content": content, "created_at": (T0 + timedelta(minutes=i)).isoformat(),
        "bot_ids": bots,
    }).encode()  # fmt: skip


async def record(chain, lines: list[tuple[str, list[str]]]) -> None:
    ingest, embedding, _, d = chain
    commands = [
        decode_command(subjects.BOT_UPSERTED, json.dumps({"tenant_id": T, "bot_id": b, "name": b.title(),
                       "updated_at": T0.isoformat()}).encode())
        for b in ("ada", "bram")
    ]  # fmt: skip
    commands += [
        decode_command(subjects.MESSAGE_CREATED, created(i, text, bots)) for i, (text, bots) in enumerate(lines)
    ]
    assert await ingest.on_chat_batch(items(commands)) == []
    assert await embedding.on_log_batch(items(published(d).take())) == []  # what the relay delivers


def request(bot: str) -> dict:
    return {"tenant_id": T, "user_id": U, "conversation_id": C, "bot_id": bot,
            "user_message": "Where does the dragon sleep?", "max_tokens": 3000}  # fmt: skip


async def test_an_old_message_out_of_the_window_is_retrieved_by_meaning(chain):
    await record(chain, [(DRAGON, ["ada"])] + [(line, ["ada"]) for line in FILLER])
    rpc = chain[2]

    reply = await rpc(subjects.CONTEXT_ASSEMBLE, request("ada"))

    assert "error" not in reply
    assert reply["degraded"] == []
    assert DRAGON in reply["context"]
    assert DRAGON not in (next(s["text"] for s in reply["sections"] if s["name"] == "history"))
    scored = [s for s in reply["sources"] if "m0" in s["message_ids"]]
    assert scored
    assert scored[0]["score"] is not None


async def test_a_bot_that_was_absent_does_not_retrieve_it(chain):
    await record(chain, [(DRAGON, ["ada"])] + [(line, ["ada", "bram"]) for line in FILLER])
    rpc = chain[2]

    reply = await rpc(subjects.CONTEXT_ASSEMBLE, request("bram"))

    assert "error" not in reply
    assert "dragon" not in reply["context"].lower()


class Recording:
    """The Edge index, recording the lexical query of each hybrid search the assembler makes."""

    def __init__(self, index: VectorIndex) -> None:
        self.index = index
        self.lexical: list[set[int]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.index, name)

    async def hybrid_search(self, query):
        self.lexical.append(set(query.sparse.indices))
        return await self.index.hybrid_search(query)

    async def hybrid_search_many(self, queries):
        self.lexical.extend(set(q.sparse.indices) for q in queries)
        return await self.index.hybrid_search_many(queries)


async def test_a_second_search_asks_again_with_the_words_the_first_hits_share(tmp_path, embedder):
    lines = [
        "Tomas buried a chest of silver coins under the floor of the old mill.",
        "The dragon sleeps by the old mill near the river.",
        "Nobody goes near the old mill at night, they say the dragon sleeps there.",
        *FILLER,
    ]
    async with edge_index(tmp_path, embedder) as index:
        recording = Recording(index)
        d = deps(vectors=recording, embedder=embedder)
        async with retrieval_chain(d, index, embedder, history_limit=4, second_search_weight=0.5) as (i, e, broker):
            await record((i, e, Rpc(broker), d), [(line, ["ada"]) for line in lines])

            reply = await Rpc(broker)(subjects.CONTEXT_ASSEMBLE, request("ada"))

    assert "error" not in reply
    assert reply["degraded"] == []
    retrieved = {
        m for s in reply["sources"] if s["kind"] == "message" and s["score"] is not None for m in s["message_ids"]
    }
    assert {"m1", "m2"} <= retrieved
    mill = term_id(tokens("mill")[0])
    assert mill not in recording.lexical[0]  # the question does not say it
    assert any(mill in asked for asked in recording.lexical)  # the two dragon turns do
