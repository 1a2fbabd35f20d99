"""The context as of an earlier message (``as_of_message_id``, ``gather/as_of.py``) on in-memory read models:
the history ends with the picked message, facts learned after it are not known yet, and an id the
conversation does not hold is a ``not_found`` reply that shows nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mnemo.services.context_assembler.app import create_router
from mnemo.services.context_assembler.settings import AssemblerSettings
from mnemo.shared import subjects
from mnemo.shared.events.recorded import knowledge_stream, lorebook_stream, player_scope
from tests.components import deps, served
from tests.context_assembler.component.test_context_rpc import LINES, T0, Seeded, request, section
from tests.envelopes import recorded

T, U, C = "t1", "u1", "c1"
LATER_FACT = "Mira keeps the orchid seeds in a brass tin."  # learned from m3, at m3's time


def _learned_at_m3():
    at = T0 + timedelta(minutes=3)  # the extractor's learned_at: the time of the message it came from
    payload = {"fact_id": "f7", "character_id": "ada", "character_kind": "bot", "user_id": U, "conversation_id": C,
               "text": LATER_FACT, "subject": "mira:seeds", "fact_type": "semantic", "confidence": 0.8,
               "learned_at": at, "scope": player_scope(U), "message_ids": ["m3"], "method": "pattern"}  # fmt: skip
    return recorded(T, knowledge_stream(T, "ada"), 7, "knowledge.fact_learned", payload, at)


@pytest.fixture
async def assembler():
    reads = Seeded()
    await reads.seed()
    await reads.knowledge.apply([_learned_at_m3()])
    sticky = {"uid": 1, "key": ["greenhouse"], "content": "The greenhouse doors stick.", "sticky": 3}
    await reads.lore.apply([recorded(T, lorebook_stream(T, "lb1"), 4, "lorebook.entry_created",
                                     {"lorebook_id": "lb1", "uid": 1, "entry": sticky, "at": T0}, T0)])  # fmt: skip
    router = create_router(deps(read_models=reads.ports), AssemblerSettings(), reads.assembler_reads())
    async with served(router) as rpc:
        yield rpc, reads


@pytest.fixture
def rpc(assembler):
    return assembler[0]


async def test_the_history_ends_with_the_picked_message_and_later_facts_are_not_known_yet(rpc):
    now = await rpc(subjects.CONTEXT_ASSEMBLE, request(user_message=""))
    then = await rpc(subjects.CONTEXT_ASSEMBLE, request(user_message="", as_of_message_id="m1"))

    assert "error" not in then
    assert [s["id"] for s in then["sources"] if s["kind"] == "message"] == ["m0", "m1"]
    assert LINES[4][2] not in then["context"], "m4 came after the picked message"
    assert LATER_FACT in section(now, "knowledge"), "known now"
    assert LATER_FACT not in then["context"], "learned from m3, after m1"
    assert "Mira grows moon orchids." in section(then, "knowledge"), "learned before m1: known then"


async def test_as_of_the_last_message_is_the_context_of_now(rpc):
    now = await rpc(subjects.CONTEXT_ASSEMBLE, request())
    at_last = await rpc(subjects.CONTEXT_ASSEMBLE, request(as_of_message_id="m4"))

    assert at_last["context"] == now["context"]
    assert at_last["sources"] == now["sources"]


async def test_the_picked_message_counts_even_when_the_bot_did_not_witness_it(rpc):
    then = await rpc(subjects.CONTEXT_ASSEMBLE, request(as_of_message_id="m2"))  # Ada was away for m2

    assert [s["id"] for s in then["sources"] if s["kind"] == "message"] == ["m0", "m1"]
    assert "vault code" not in then["context"], "what the bot did not witness stays out"
    assert LATER_FACT not in then["context"]


@pytest.mark.parametrize(
    "over",
    [
        {"as_of_message_id": "m99"},  # no such message
        {"as_of_message_id": "m1", "conversation_id": "c9"},  # another conversation of the user
        {"as_of_message_id": "m1", "user_id": "u2"},  # another user's conversation c1 (none)
        {"as_of_message_id": "m1", "tenant_id": "t2"},  # another tenant
    ],
)
async def test_a_message_the_conversation_does_not_hold_is_not_found_and_shows_nothing(rpc, over):
    reply = await rpc(subjects.CONTEXT_ASSEMBLE, request(**over))

    assert set(reply) == {"error"}
    assert reply["error"]["code"] == "not_found"
    assert LINES[0][2] not in reply["error"]["message"]


async def test_a_replay_records_no_timed_lore_state(assembler):
    rpc, reads = assembler

    then = await rpc(subjects.CONTEXT_ASSEMBLE, request(as_of_message_id="m4"))
    replayed = await reads.timed.state(T, U, C)
    now = await rpc(subjects.CONTEXT_ASSEMBLE, request())
    recorded_now = await reads.timed.state(T, U, C)

    assert "The greenhouse doors stick." in then["context"], "the sticky entry fires in the replay too"
    assert replayed.version == 0, "a replay changes no state"
    assert "The greenhouse doors stick." in now["context"]
    assert recorded_now.version == 1, "a request of now records the entry's stickiness"
