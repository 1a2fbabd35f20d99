"""A fork's World Info timed state (sticky, cooldown) starts as its parent's was at the fork point.

``TimedStates.load`` on the in-memory log and read model: a fork with no state of its own gets the parent's
last state recorded at a chat of at most ``from_index + 1`` messages (through a chain of forks), at version 0
so that its own first scan appends to its own stream; later parent states never reach it.
"""

from __future__ import annotations

from datetime import UTC, datetime

from mnemo.services.context_assembler.lore.engine.timed import TimedState
from mnemo.services.context_assembler.lore.timed import TimedStates
from mnemo.shared.eventlog.save import EventSaver
from mnemo.shared.events.envelope import NewEvent
from mnemo.shared.events.recorded import conversation_stream, lore_timed_stream
from mnemo.shared.readmodels.inmemory.lore_timed import InMemoryLoreTimed
from mnemo_client.wire.contract import ContextAssembleRequest
from tests.components import deps

T, U = "t1", "u1"
T0 = datetime(2026, 3, 1, tzinfo=UTC)


def request(conversation: str) -> ContextAssembleRequest:
    return ContextAssembleRequest(tenant_id=T, user_id=U, conversation_id=conversation, bot_id="b1")


def state(uid: str, count: int) -> TimedState:
    return TimedState.model_validate({"sticky": {uid: {"hash": "h", "start": count, "end": count + 3}}, "cooldown": {}})


async def record_state(states: TimedStates, conversation: str, uid: str, count: int) -> None:
    before = await states.load(request(conversation))
    await states.save(request(conversation), before, state(uid, count), count)


async def fork(store, conversation: str, parent: str, from_index: int) -> None:
    payload = {"user_id": U, "conversation_id": conversation, "parent_conversation_id": parent,
               "from_message_id": f"m{from_index}", "from_index": from_index, "root_conversation_id": "p",
               "forked_at": T0}  # fmt: skip
    event = NewEvent(type="conversation.forked", tenant_id=T, payload=payload)
    await store.append(conversation_stream(T, U, conversation), 0, [event])


async def test_a_fork_starts_from_the_parents_state_at_the_fork_point() -> None:
    d = deps()
    states = TimedStates(d.store, InMemoryLoreTimed(), EventSaver(d.store, None))
    await record_state(states, "p", "early", 3)
    await record_state(states, "p", "late", 9)
    await fork(d.store, "f", "p", from_index=4)  # a chat of 5 messages: the state recorded at 3 applies
    await fork(d.store, "g", "f", from_index=7)  # a fork of the fork: still at most 5 of the parent's

    inherited = await states.load(request("f"))
    assert (inherited.state, inherited.version) == (state("early", 3), 0)
    assert (await states.load(request("g"))).state == state("early", 3)
    assert (await states.load(request("p"))).state == state("late", 9), "the parent keeps its own"

    await record_state(states, "f", "own", 6)  # the fork's first scan records in its own stream
    assert (await states.load(request("f"))).state == state("own", 6)
    assert len(await d.store.read_stream(lore_timed_stream(T, U, "f"))) == 1
    assert (await states.load(request("g"))).state == state("own", 6), "g forked f at 8 messages: f's own at 6"
    await record_state(states, "f", "later", 12)
    assert (await states.load(request("g"))).state == state("own", 6), "f's state after the fork point stays out"


async def test_a_fork_before_any_parent_state_and_a_plain_conversation_start_empty() -> None:
    d = deps()
    states = TimedStates(d.store, InMemoryLoreTimed(), EventSaver(d.store, None))
    await record_state(states, "p", "late", 9)
    await fork(d.store, "f", "p", from_index=2)
    assert (await states.load(request("f"))).state == TimedState()
    assert (await states.load(request("plain"))).state == TimedState()
