"""The context-assembler on an in-memory broker and read models: what a bot is shown before it speaks.

No vector index or embedder here (the reply says so in ``degraded``); retrieval over real vectors is covered
with the embedding service in ``test_retrieval.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mnemo.services.context_assembler.app import create_router
from mnemo.services.context_assembler.settings import AssemblerSettings
from mnemo.shared import subjects
from mnemo.shared.events.recorded import bot_stream, knowledge_stream, lorebook_stream, persona_stream, player_scope
from tests.components import Reads, assert_bad_request, deps, served
from tests.envelopes import message_recorded, recorded

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
T, U, C = "t1", "u1", "c1"
LINES = [  # (role, bots present, text)
    ("user", ["ada"], "We landed on the moon base at dawn."),
    ("assistant", ["ada"], "Welcome, the airlock is behind you."),
    ("user", ["bram"], "Bram, keep the vault code to yourself: 4-1-7."),  # Ada was not there
    ("assistant", ["ada"], "The greenhouse is the warmest room here."),
    ("user", ["ada"], "I brought orchid seeds for the greenhouse."),
]


class Seeded(Reads):
    """The assembler's read models, all in memory, seeded with events as the log would project them."""

    async def seed(self) -> None:
        profiles = [
            recorded(T, bot_stream(T, "ada"), 1, "bot.recorded",
                     {"bot_id": "ada", "owner_user_id": None, "name": "Ada", "system_prompt": "You guide visitors.",
                      "updated_at": T0}, T0),
            recorded(T, persona_stream(T, U, "mira"), 1, "persona.recorded",
                     {"user_id": U, "persona_id": "mira", "name": "Mira", "description": "a botanist",
                      "traits": ["curious"], "updated_at": T0}, T0),
        ]  # fmt: skip
        messages = [
            message_recorded(T, U, C, i, text, created_at=T0 + timedelta(minutes=i), role=role, bot_ids=bots,
                             author_name="Mira" if role == "user" else "Ada", persona_id="mira" if role == "user" else None)
            for i, (role, bots, text) in enumerate(LINES)
        ]  # fmt: skip
        await self.models.apply(profiles + messages)
        await self.knowledge.apply(
            [self.fact("f1", U, "Mira grows moon orchids."), self.fact("f2", "u2", "Tom fears the dark.")]
        )
        book = lorebook_stream(T, "lb1")
        entry = {
            "uid": 0,
            "key": ["orchid"],
            "content": "Moon orchids bloom only in low gravity.",
            "comment": "Orchids",
        }
        await self.lore.apply([
            recorded(T, book, 1, "lorebook.created", {"lorebook_id": "lb1", "owner_user_id": "creator", "name": "Moon", "created_at": T0}, T0),
            recorded(T, book, 2, "lorebook.entry_created", {"lorebook_id": "lb1", "uid": 0, "entry": entry, "at": T0}, T0),
            recorded(T, book, 3, "lorebook.attached", {"lorebook_id": "lb1", "bot_ids": ["ada"], "attached_at": T0}, T0),
        ])  # fmt: skip

    @staticmethod
    def fact(fid: str, user: str, text: str):
        payload = {"fact_id": fid, "character_id": "ada", "character_kind": "bot", "user_id": user,
                   "conversation_id": C, "text": text, "subject": f"{fid}:subject", "fact_type": "semantic",
                   "confidence": 0.8, "learned_at": T0, "scope": player_scope(user), "message_ids": ["m0"],
                   "method": "pattern"}  # fmt: skip
        return recorded(T, knowledge_stream(T, "ada"), int(fid[1:]), "knowledge.fact_learned", payload, T0)


@pytest.fixture
async def assembler():
    reads = Seeded()
    await reads.seed()
    d = deps(read_models=reads.ports)
    async with served(create_router(d, AssemblerSettings(), reads.assembler_reads())) as rpc:
        yield rpc, reads, d


def request(**over):
    return {"tenant_id": T, "user_id": U, "conversation_id": C, "bot_id": "ada", "persona_id": "mira",
            "user_message": "Where should I plant the orchid seeds?", "max_tokens": 3000} | over  # fmt: skip


def section(reply, name):
    return next((s["text"] for s in reply["sections"] if s["name"] == name), None)


async def test_a_reply_holds_the_bot_the_persona_and_the_history_the_bot_witnessed(assembler):
    rpc, _, _ = assembler

    reply = await rpc(subjects.CONTEXT_ASSEMBLE, request())

    assert "error" not in reply
    assert "You guide visitors." in section(reply, "system")
    assert "Mira" in section(reply, "persona")
    history = section(reply, "history")
    for i in (0, 1, 3, 4):
        assert LINES[i][2] in history
    assert "vault code" not in reply["context"], "Ada was not in the scene when it was said"
    assert [s["id"] for s in reply["sources"] if s["kind"] == "message"] == ["m0", "m1", "m3", "m4"]
    assert reply["token_count"] == sum(s["tokens"] for s in reply["sections"]) <= 3000
    assert reply["degraded"] == ["embedder"]


async def test_the_bot_knows_what_it_learned_from_this_user_only(assembler):
    rpc, _, _ = assembler

    reply = await rpc(subjects.CONTEXT_ASSEMBLE, request())
    other_user = await rpc(subjects.CONTEXT_ASSEMBLE, request(user_id="u2", conversation_id="c9", persona_id=None))

    assert "Mira grows moon orchids." in section(reply, "knowledge")
    assert "Tom fears the dark." not in reply["context"]
    assert "Tom fears the dark." in other_user["context"]
    assert "Mira grows moon orchids." not in other_user["context"]


async def test_attached_lore_is_activated_by_its_keyword(assembler):
    rpc, _, _ = assembler

    reply = await rpc(subjects.CONTEXT_ASSEMBLE, request())
    unrelated = await rpc(subjects.CONTEXT_ASSEMBLE, request(conversation_id="c-empty", user_message="Hello there."))
    other_bot = await rpc(subjects.CONTEXT_ASSEMBLE, request(bot_id="bram"))

    assert "Moon orchids bloom only in low gravity." in reply["context"]
    assert [s["id"] for s in reply["sources"] if s["kind"] == "lore"] == ["lb1.0"]
    assert "low gravity" not in unrelated["context"]
    assert "low gravity" not in other_bot["context"], "the book is attached to Ada only"


async def test_a_small_budget_keeps_the_newest_history(assembler):
    rpc, _, _ = assembler

    reply = await rpc(subjects.CONTEXT_ASSEMBLE, request(max_tokens=64, persona_id=None))

    assert "error" not in reply
    assert reply["token_count"] <= 64
    kept = [s["id"] for s in reply["sources"] if s["kind"] == "message"]
    assert kept == ["m0", "m1", "m3", "m4"][-len(kept) :], "whatever fits is the newest"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"tenant_id": T}, "bot_id"),
        (b"{not json", "JSON"),
        (request(max_tokens=1), "max_tokens"),
        (request(bot_ids=["ada"]), "bot_ids"),
    ],
)
async def test_a_bad_request_gets_an_error_reply(assembler, body, says):
    rpc, _, _ = assembler

    reply = await rpc(subjects.CONTEXT_ASSEMBLE, body)

    assert_bad_request(reply, says)
