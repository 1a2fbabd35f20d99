"""Ingest records swipes and forks (in-memory log and read models): what the history shows after each.

Swipes: a new alternative is recorded apart and shown at once (a ``message.edited`` of its slot with
``alternative_id``); a selection shows another one; edits and deletes of alternatives; redeliveries record
nothing. Forks: the fork's stream is ``conversation.forked`` plus copies of the parent's live messages up to
the fork point with the texts then shown; the parent's later changes stay out of it.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from mnemo.shared import subjects
from mnemo.shared.events.recorded import conversation_stream
from tests.ingest.component.test_ingest import T0, C, Ingest, T, U, created, deleted, edited


def swipe(i: int, of: str, content: str, conversation: str = C) -> tuple[str, dict]:
    subject, body = created(i, content, conversation=conversation)
    return subject, {**body, "message_id": f"s{i}", "swipe_of": of, "role": "assistant"}


def select(message_id: str, minute: int = 0, conversation: str = C) -> tuple[str, dict]:
    return subjects.MESSAGE_SWIPE_SELECTED, {
        "tenant_id": T, "user_id": U, "conversation_id": conversation, "message_id": message_id,
        "selected_at": T0 + timedelta(hours=3, minutes=minute),
    }  # fmt: skip


def fork(new: str, parent: str, at: str) -> tuple[str, dict]:
    return subjects.CONVERSATION_FORKED, {
        "tenant_id": T, "user_id": U, "conversation_id": new, "parent_conversation_id": parent,
        "from_message_id": at, "forked_at": T0 + timedelta(hours=4),
    }  # fmt: skip


async def shown(ingest: Ingest, conversation: str = C) -> list[tuple[str, str]]:
    return [(m.message_id, m.content) for m in await ingest.models.recent(T, U, conversation, 100)]


@pytest.fixture
def ingest() -> Ingest:
    return Ingest()


async def test_a_swipe_is_shown_at_once_and_a_selection_switches_back(ingest):
    await ingest.send(created(0, "Hello."), created(1, "First reply."))
    assert await ingest.send(swipe(2, "m1", "Second reply.")) == []
    assert await shown(ingest) == [("m0", "Hello."), ("m1", "Second reply.")]

    assert await ingest.send(select("m1")) == []
    assert await shown(ingest) == [("m0", "Hello."), ("m1", "First reply.")]
    assert await ingest.send(select("s2", minute=1)) == []
    assert await shown(ingest) == [("m0", "Hello."), ("m1", "Second reply.")]
    edits = [e for e in await ingest.store.read_stream(conversation_stream(T, U, C)) if e.type == "message.edited"]
    assert [e.payload["alternative_id"] for e in edits] == ["s2", "m1", "s2"]


async def test_redeliveries_and_no_op_selections_record_nothing(ingest):
    await ingest.send(created(0), created(1), swipe(2, "m1", "Again."))
    version = len(await ingest.store.read_stream(conversation_stream(T, U, C)))
    subject, plain = swipe(2, "m1", "Again.")
    republished = (subject, {k: v for k, v in plain.items() if k != "swipe_of"})
    assert await ingest.send(swipe(2, "m1", "Again."), select("s2"), republished) == []
    assert len(await ingest.store.read_stream(conversation_stream(T, U, C))) == version


async def test_a_swipe_of_a_swipe_joins_the_same_message_and_bad_swipes_are_refused(ingest):
    await ingest.send(created(0), created(1, "One."), swipe(2, "m1", "Two."))
    assert await ingest.send(swipe(3, "s2", "Three.")) == []
    assert await shown(ingest) == [("m0", "line 0"), ("m1", "Three.")]
    reasons = await ingest.send(swipe(4, "nope", "x"), select("ghost"))
    assert "not recorded" in reasons[0]
    assert "not recorded" in reasons[1]
    user_swipe = created(4, "x")
    user_swipe[1].update(swipe_of="m1")
    assert "role" in (await ingest.send(user_swipe))[0]


async def test_edits_and_deletes_of_alternatives(ingest):
    await ingest.send(created(0), created(1, "One."), swipe(2, "m1", "Two."))
    (reason,) = await ingest.send(edited("m1", "One, edited."))
    assert "not the current alternative" in reason
    assert await ingest.send(edited("s2", "Two, edited.")) == []
    assert await shown(ingest) == [("m0", "line 0"), ("m1", "Two, edited.")]
    assert await ingest.send(deleted("m1")) == []  # not shown: only that alternative goes
    assert "deleted" in (await ingest.send(select("m1")))[0]
    assert await shown(ingest) == [("m0", "line 0"), ("m1", "Two, edited.")]
    assert await ingest.send(deleted("s2")) == []  # the shown one: the message leaves the history
    assert await shown(ingest) == [("m0", "line 0")]


async def test_a_fork_copies_the_prefix_with_the_texts_shown_and_nothing_after(ingest):
    await ingest.send(*(created(i) for i in range(5)), swipe(9, "m1", "Swiped."), deleted("m2"))
    assert await ingest.send(fork("f1", C, "m3")) == []
    await ingest.send(edited("m0", "Parent edit after the fork."), created(5, "Parent later."))

    assert await shown(ingest, "f1") == [("m0", "line 0"), ("m1", "Swiped."), ("m3", "line 3")]
    events = await ingest.store.read_stream(conversation_stream(T, U, "f1"))
    assert events[0].type == "conversation.forked"
    assert events[0].payload["from_index"] == 3
    assert [e.payload["index"] for e in events[1:]] == [0, 1, 3]

    assert await ingest.send(fork("f1", C, "m3")) == []  # a redelivery
    assert len(await ingest.store.read_stream(conversation_stream(T, U, "f1"))) == len(events)
    subject, body = created(4, "Fork's own line.", conversation="f1")
    assert await ingest.send((subject, body)) == []
    assert (await shown(ingest, "f1"))[-1] == ("m4", "Fork's own line.")
    assert ("m4", "line 4") in await shown(ingest)


async def test_bad_forks_are_refused(ingest):
    await ingest.send(created(0), created(1), swipe(2, "m1", "Other."))
    reasons = await ingest.send(fork("f1", C, "ghost"), fork("f2", C, "m1"), fork(C, C, "m0"))
    assert "not recorded" in reasons[0]
    assert "not the current alternative" in reasons[1]
    assert "already has events" in reasons[2] or "itself" in reasons[2]


async def test_forks_of_equally_named_conversations_of_two_users_copy_their_own_parent(ingest):
    other_user = created(0, "Another user's line.")
    other_user[1]["user_id"] = "u2"
    await ingest.send(created(0, "My line."), other_user)
    theirs = fork("f1", C, "m0")
    theirs[1]["user_id"] = "u2"
    assert await ingest.send(fork("f1", C, "m0"), theirs) == []
    assert await shown(ingest, "f1") == [("m0", "My line.")]
    assert [(m.message_id, m.content) for m in await ingest.models.recent(T, "u2", "f1", 10)] == [
        ("m0", "Another user's line.")
    ]
