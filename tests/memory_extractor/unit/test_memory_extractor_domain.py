"""Pure memory-extractor logic: who witnessed a message, deterministic ids, grouping per character stream."""

from __future__ import annotations

from datetime import UTC, datetime

from mnemo.services.memory_extractor.domain import group_appends
from mnemo.shared.aggregates.knowledge import witnesses_of
from mnemo.shared.events.recorded import MessageRecorded, MessagesWitnessed, knowledge_stream


def recorded(
    message_id: str = "m1",
    index: int = 3,
    bot_ids: tuple[str, ...] = ("b1", "b2"),
    persona_id: str | None = "p1",
    user: str = "u1",
    conv: str = "c1",
) -> MessageRecorded:
    return MessageRecorded(
        user_id=user,
        conversation_id=conv,
        message_id=message_id,
        role="user",
        author_id=persona_id,
        author_name="Ana",
        content="hello",
        created_at=datetime(2026, 1, 2, tzinfo=UTC),
        bot_ids=list(bot_ids),
        persona_id=persona_id,
        index=index,
        tokens=1,
    )


def test_every_bot_present_and_the_persona_witness_the_message():
    ws = witnesses_of("t1", recorded(), causation_id="ev-1")
    assert [w.stream_id for w in ws] == [knowledge_stream("t1", c) for c in ("b1", "b2", "p1")]
    payloads = [MessagesWitnessed.model_validate(w.event.payload) for w in ws]
    assert [(p.character_id, p.character_kind) for p in payloads] == [("b1", "bot"), ("b2", "bot"), ("p1", "persona")]
    for p in payloads:
        assert p.message_ids == ["m1"]
        assert (p.first_index, p.last_index) == (3, 3)
        assert (p.user_id, p.conversation_id) == ("u1", "c1")
    assert all(w.event.type == "knowledge.witnessed" and w.event.causation_id == "ev-1" for w in ws)
    assert all(w.event.tenant_id == "t1" for w in ws)


def test_no_persona_and_repeated_bots():
    ws = witnesses_of("t1", recorded(bot_ids=("b1", "b1"), persona_id=None))
    assert [w.stream_id for w in ws] == [knowledge_stream("t1", "b1")]
    assert witnesses_of("t1", recorded(bot_ids=(), persona_id=None)) == []


def test_event_ids_are_deterministic_and_scoped():
    first = [w.event.event_id for w in witnesses_of("t1", recorded())]
    assert first == [w.event.event_id for w in witnesses_of("t1", recorded())], "redelivery: same ids"
    assert len(set(first)) == 3
    assert set(first).isdisjoint(w.event.event_id for w in witnesses_of("t2", recorded()))
    assert set(first).isdisjoint(w.event.event_id for w in witnesses_of("t1", recorded(message_id="m2")))
    assert set(first).isdisjoint(w.event.event_id for w in witnesses_of("t1", recorded(conv="c2")))


def test_group_appends_one_per_stream_in_order_without_repeats():
    batch = [*witnesses_of("t1", recorded("m1", 1)), *witnesses_of("t1", recorded("m2", 2, bot_ids=("b1",)))]
    batch += witnesses_of("t1", recorded("m1", 1))  # a redelivered duplicate in the same batch
    appends = group_appends(batch, {knowledge_stream("t1", "b1"): 7})
    by_stream = {a.stream_id: a for a in appends}
    assert list(by_stream) == [knowledge_stream("t1", c) for c in ("b1", "b2", "p1")]
    b1 = by_stream[knowledge_stream("t1", "b1")]
    assert b1.expected_version == 7
    assert [MessagesWitnessed.model_validate(e.payload).message_ids for e in b1.events] == [["m1"], ["m2"]]
    assert by_stream[knowledge_stream("t1", "b2")].expected_version == 0
    assert len(by_stream[knowledge_stream("t1", "p1")].events) == 2
