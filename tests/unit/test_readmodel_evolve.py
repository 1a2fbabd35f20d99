"""The conversation fold: counts, participants and persona switches by index, idempotency (Hypothesis)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import conversation_stream
from mnemo.shared.readmodels import ConversationState, evolve, fold
from tests.envelopes import numbered

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
SID = conversation_stream("t1", "u1", "c1")


def envelope(version: int, type_: str, payload: dict[str, Any], stream: str = SID) -> EventEnvelope:
    schema_version = 2 if type_ == "message.recorded" else 1
    return numbered(
        "t1", stream, version, type_, payload, T0, schema_version=schema_version, event_id=f"e{version}-{stream}"
    )


def recorded(
    version: int,
    index: int,
    *,
    bots: list[str] | None = None,
    persona: str | None = None,
    role: str = "user",
    tokens: int = 3,
) -> EventEnvelope:
    return envelope(
        version,
        "message.recorded",
        {
            "user_id": "u1",
            "conversation_id": "c1",
            "message_id": f"m{index}",
            "role": role,
            "author_id": persona if role == "user" else (bots or ["b"])[0],
            "author_name": "x",
            "content": "hello there",
            "created_at": (T0 + timedelta(minutes=index)).isoformat(),
            "bot_ids": bots or [],
            "persona_id": persona,
            "index": index,
            "tokens": tokens,
        },
    )


def deleted(version: int, message_id: str) -> EventEnvelope:
    payload = {"user_id": "u1", "conversation_id": "c1", "message_id": message_id, "deleted_at": T0.isoformat()}
    return envelope(version, "message.deleted", payload)


def edited(version: int, message_id: str) -> EventEnvelope:
    payload = {
        "user_id": "u1",
        "conversation_id": "c1",
        "message_id": message_id,
        "content": "changed",
        "edited_at": T0.isoformat(),
        "tokens": 2,
    }
    return envelope(version, "message.edited", payload)


def initial() -> ConversationState:
    return ConversationState.initial("t1", "u1", "c1")


def test_counts_tokens_and_times() -> None:
    events = [recorded(1, 0, tokens=4), recorded(2, 1, tokens=6), edited(3, "m0"), deleted(4, "m1")]
    state = fold(initial(), events)
    assert state.stream_id == SID
    assert (state.version, state.message_count, state.token_count) == (4, 2, 10)
    assert (state.deleted_count, state.edit_count, state.live_message_count) == (1, 1, 1)
    assert state.first_message_at == T0
    assert state.last_message_at == T0 + timedelta(minutes=1)


def test_bot_presence_intervals_follow_the_scene() -> None:
    events = [
        recorded(1, 0, bots=["alice"]),
        recorded(2, 1, bots=["alice", "bob"]),
        recorded(3, 2, bots=[]),  # no scene information: unchanged
        recorded(4, 3, bots=["bob"]),  # alice leaves at 3
        recorded(5, 4, bots=["alice", "bob"]),  # alice comes back at 4
    ]
    state = fold(initial(), events)
    spans = [(b.bot_id, b.from_index, b.until_index) for b in state.bots]
    assert spans == [("alice", 0, 3), ("bob", 1, None), ("alice", 4, None)]
    assert [state.bots_at(i) for i in range(5)] == [
        ["alice"],
        ["alice", "bob"],
        ["alice", "bob"],
        ["bob"],
        ["bob", "alice"],
    ]
    assert sorted(state.present_bot_ids) == ["alice", "bob"]


def test_persona_switches_are_recorded_with_their_index() -> None:
    events = [
        recorded(1, 0, persona="knight"),
        recorded(2, 1, persona=None, role="assistant", bots=["b"]),  # a bot's message says nothing
        recorded(3, 2, persona="knight"),
        recorded(4, 3, persona="mage"),
        recorded(5, 4, persona=None, role="user"),  # the user dropped the persona
    ]
    state = fold(initial(), events)
    assert [(s.persona_id, s.from_index) for s in state.persona_switches] == [
        ("knight", 0),
        ("mage", 3),
        (None, 4),
    ]
    assert state.persona_id is None
    assert [state.persona_at(i) for i in range(5)] == ["knight", "knight", "knight", "mage", None]


def test_out_of_order_foreign_and_gapped_events_are_ignored() -> None:
    state = fold(initial(), [recorded(1, 0)])
    assert evolve(state, recorded(3, 2)) == state  # gap: version 2 missing
    assert evolve(state, recorded(1, 0)) == state  # already applied
    other = envelope(2, "message.recorded", recorded(2, 1).payload, stream=conversation_stream("t1", "u1", "c2"))
    assert evolve(state, other) == state


def test_other_event_types_only_advance_the_version() -> None:
    summary = envelope(2, "summary.created", {"anything": 1})
    state = fold(initial(), [recorded(1, 0), summary])
    assert (state.version, state.message_count) == (2, 1)


def test_document_round_trip() -> None:
    state = fold(initial(), [recorded(1, 0, bots=["a"], persona="p"), recorded(2, 1, bots=["b"], persona="q")])
    doc = state.to_doc()
    assert doc["_id"] == SID
    naive = {**doc, "last_message_at": doc["last_message_at"].replace(tzinfo=None)}  # what a non-tz client returns
    assert ConversationState.from_doc(naive) == state


@st.composite
def histories(draw: st.DrawFn) -> list[EventEnvelope]:
    """A valid stream: messages with random scenes and personas, edits and deletes of earlier messages."""
    events: list[EventEnvelope] = []
    count = 0
    for version in range(1, draw(st.integers(1, 25)) + 1):
        kind = draw(st.sampled_from(["msg", "msg", "msg", "edit", "delete"])) if count else "msg"
        if kind == "msg":
            bots = draw(st.lists(st.sampled_from(["a", "b", "c"]), max_size=3, unique=True))
            persona = draw(st.sampled_from([None, "p", "q"]))
            role = draw(st.sampled_from(["user", "assistant"]))
            events.append(recorded(version, count, bots=bots, persona=persona, role=role))
            count += 1
        elif kind == "edit":
            events.append(edited(version, f"m{draw(st.integers(0, count - 1))}"))
        else:
            events.append(deleted(version, f"m{draw(st.integers(0, count - 1))}"))
    return events


@settings(max_examples=150, deadline=None)
@given(history=histories(), data=st.data())
def test_duplicates_and_replays_change_nothing(history: list[EventEnvelope], data: st.DataObject) -> None:
    once = fold(initial(), history)
    assert fold(initial(), history + history) == once
    assert fold(once, history) == once
    noisy: list[EventEnvelope] = []
    for env in history:  # each event once in order, plus redeliveries of events already seen
        noisy.append(env)
        noisy.extend(data.draw(st.lists(st.sampled_from(noisy), max_size=2)))
    state = initial()
    for env in noisy:  # in arrival order, not sorted: what a consumer would do
        state = evolve(state, env)
    assert state == once


@settings(max_examples=150, deadline=None)
@given(history=histories())
def test_participants_match_every_message_scene(history: list[EventEnvelope]) -> None:
    state = fold(initial(), history)
    scene: list[str] = []
    persona: str | None = None
    for env in history:
        if env.type != "message.recorded":
            continue
        p = env.payload
        if p["bot_ids"]:
            scene = p["bot_ids"]
        if p["persona_id"] is not None or p["role"] == "user":
            persona = p["persona_id"]
        assert sorted(state.bots_at(p["index"])) == sorted(scene)
        assert state.persona_at(p["index"]) == persona
    assert state.message_count == sum(e.type == "message.recorded" for e in history)
