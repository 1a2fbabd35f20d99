"""Ingest decisions: indexes, tokens, deterministic ids, duplicates, refusals (pure, no I/O)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from mnemo.services.ingest.domain import decide_stream, stream_of
from mnemo.services.ingest.handlers import decode_command
from mnemo.shared.aggregates.conversation import ConversationDecider, KnownMessage, known_from_events
from mnemo.shared.aggregates.profiles import decide_profile
from mnemo.shared.delivery import InvalidMessage
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import REGISTRY, MessageRecorded, conversation_stream, created_event_id
from mnemo.shared.readmodels import ConversationState
from mnemo.shared.tokens import estimate_tokens
from mnemo_client.wire.contract import BotUpserted, MessageCreated, MessageDeleted, MessageEdited, PersonaUpserted
from tests.envelopes import numbered

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
IDS = {"tenant_id": "t1", "user_id": "u1", "conversation_id": "c1"}


def created(message_id: str, content: str = "Hello there, traveller.", **extra: Any) -> MessageCreated:
    fields: dict[str, Any] = {
        **IDS,
        "message_id": message_id,
        "role": "user",
        "author_id": "p1",
        "author_name": "Ann",
        "content": content,
        "created_at": T0,
        "bot_ids": ["b1"],
        "persona_id": "p1",
    }
    return MessageCreated(**(fields | extra))


def edited(message_id: str, content: str = "Changed.", **extra: Any) -> MessageEdited:
    return MessageEdited(**(IDS | {"message_id": message_id, "content": content, "edited_at": T0} | extra))


def deleted(message_id: str) -> MessageDeleted:
    return MessageDeleted(**(IDS | {"message_id": message_id, "deleted_at": T0}))


def state(message_count: int = 0) -> ConversationState:
    return ConversationState.initial("t1", "u1", "c1").model_copy(update={"message_count": message_count})


def test_created_gets_the_next_index_tokens_and_a_deterministic_id() -> None:
    decider = ConversationDecider(state(message_count=7), {})
    first, second = decider.decide(created("m1")), decider.decide(created("m2", "Short"))
    (e1,), (e2,) = first.events, second.events
    assert e1.type == "message.recorded"
    assert e1.event_id == created_event_id("t1", "u1", "c1", "m1")
    assert e1.event_id == ConversationDecider(state(), {}).decide(created("m1")).events[0].event_id
    assert e1.occurred_at == T0
    payload = MessageRecorded.model_validate(e1.payload)
    assert (payload.index, payload.tokens) == (7, estimate_tokens("Hello there, traveller."))
    assert MessageRecorded.model_validate(e2.payload).index == 8
    assert set(e1.payload) >= {"content", "author_name", "bot_ids", "persona_id", "created_at"}


def test_event_ids_differ_per_tenant_and_conversation() -> None:
    ids = {
        created_event_id("t1", "u1", "c1", "m1"),
        created_event_id("t2", "u1", "c1", "m1"),
        created_event_id("t1", "u1", "c2", "m1"),
    }
    assert len(ids) == 3


def test_a_known_message_is_not_recorded_again_nor_takes_an_index() -> None:
    decider = ConversationDecider(state(3), {"m1": KnownMessage(0, deleted=False)})
    assert decider.decide(created("m1")).events == ()
    assert decider.decide(created("m1", "different text")).events == ()
    (event,) = decider.decide(created("m9")).events
    assert event.payload["index"] == 3


def test_the_same_message_three_times_in_one_batch_is_one_event() -> None:
    decisions = decide_stream([created("m1"), created("m1"), created("m1")], state(), {})
    assert [len(d.events) for d in decisions] == [1, 0, 0]
    assert all(d.rejection is None for d in decisions)


def test_edit_ids_use_edit_id_or_a_hash_of_content_and_time() -> None:
    known = {"m1": KnownMessage(0, deleted=False)}
    decide = ConversationDecider(state(1), known).decide
    by_edit_id = decide(edited("m1", edit_id="e1")).events[0].event_id
    assert decide(edited("m1", "other text", edit_id="e1")).events[0].event_id == by_edit_id
    hashed = decide(edited("m1")).events[0].event_id
    assert decide(edited("m1")).events[0].event_id == hashed
    same_instant = T0.astimezone(ZoneInfo("Europe/Paris"))
    assert decide(edited("m1", edited_at=same_instant)).events[0].event_id == hashed
    assert decide(edited("m1", "Changed again.")).events[0].event_id != hashed
    assert decide(edited("m1", edited_at=T0 + timedelta(seconds=1))).events[0].event_id != hashed
    payload = decide(edited("m1", "four words in here")).events[0].payload
    assert payload["tokens"] == estimate_tokens("four words in here")


def test_edits_and_deletes_of_unknown_or_deleted_messages() -> None:
    decider = ConversationDecider(state(2), {"m1": KnownMessage(0, deleted=False), "m2": KnownMessage(1, True)})
    assert "not recorded" in (decider.decide(edited("nope")).rejection or "")
    assert "not recorded" in (decider.decide(deleted("nope")).rejection or "")
    assert "deleted" in (decider.decide(edited("m2")).rejection or "")
    assert decider.decide(deleted("m2")).events == ()  # already deleted: nothing to do
    (event,) = decider.decide(deleted("m1")).events
    assert event.type == "message.deleted"
    assert decider.decide(deleted("m1")).events == ()  # the second delete in the same batch
    assert "deleted" in (decider.decide(edited("m1")).rejection or "")


def test_a_message_created_earlier_in_the_batch_can_be_edited() -> None:
    decisions = decide_stream([created("m1"), edited("m1"), deleted("m1")], state(), {})
    assert [d.events[0].type for d in decisions] == ["message.recorded", "message.edited", "message.deleted"]


def test_profiles_are_recorded_with_content_keyed_ids() -> None:
    bot = BotUpserted(tenant_id="t1", bot_id="b1", name="Eli", system_prompt="Be kind.", updated_at=T0)
    (event,) = decide_profile(bot).events
    assert (event.type, event.payload["name"], event.payload["system_prompt"]) == ("bot.recorded", "Eli", "Be kind.")
    assert decide_profile(bot).events[0].event_id == event.event_id
    changed = bot.model_copy(update={"system_prompt": "Be curt."})
    assert decide_profile(changed).events[0].event_id != event.event_id
    persona = PersonaUpserted(
        tenant_id="t1", user_id="u1", persona_id="p1", name="Ann", traits=["brave"], updated_at=T0
    )
    (pe,) = decide_profile(persona).events
    assert (pe.type, pe.payload["traits"]) == ("persona.recorded", ["brave"])
    assert stream_of(bot) == "bot/t1/b1"
    assert stream_of(persona) == "persona/t1/u1/p1"
    assert stream_of(created("m1")) == conversation_stream("t1", "u1", "c1")
    assert decide_stream([bot, bot], None, {})[1].events == ()


def test_every_decided_payload_validates_against_the_registry() -> None:
    decisions = decide_stream([created("m1"), edited("m1"), deleted("m1")], state(), {})
    for d in decisions:
        for e in d.events:
            assert e.type in REGISTRY


def test_known_from_events_replays_the_tail() -> None:
    def env(version: int, type_: str, payload: dict[str, Any]) -> EventEnvelope:
        schema = 2 if type_ == "message.recorded" else 1
        return numbered("t1", conversation_stream("t1", "u1", "c1"), version, type_, payload, T0, schema_version=schema)

    rec = ConversationDecider(state(4), {}).decide(created("m1")).events[0]
    gone = ConversationDecider(state(), {"m1": KnownMessage(4, False)}).decide(deleted("m1")).events[0]
    known = known_from_events([env(2, gone.type, gone.payload), env(1, rec.type, rec.payload)])
    assert known == {"m1": KnownMessage(4, deleted=True)}


def test_decode_by_subject() -> None:
    body = created("m1").model_dump_json().encode()
    assert decode_command("mnemo.chat.message.created.v1", body) == created("m1")
    with pytest.raises(InvalidMessage, match="unknown subject"):
        decode_command("mnemo.chat.message.created.v9", body)
    with pytest.raises(InvalidMessage, match="Invalid JSON"):
        decode_command("mnemo.chat.message.created.v1", b"{not json")
    with pytest.raises(InvalidMessage, match="role"):
        decode_command("mnemo.chat.message.created.v1", body.replace(b'"user"', b'"wizard"', 1))


@pytest.mark.parametrize(
    ("subject", "field"),
    [
        ("mnemo.chat.message.created.v1", "created_at"),
        ("mnemo.chat.message.edited.v1", "edited_at"),
        ("mnemo.chat.message.deleted.v1", "deleted_at"),
        ("mnemo.chat.bot.upserted.v1", "updated_at"),
        ("mnemo.chat.persona.upserted.v1", "updated_at"),
    ],
)
@pytest.mark.parametrize("moment", ["0001-01-01T00:00:00+05:45", "9999-12-31T23:59:59-07:00"])
def test_a_time_out_of_range_in_utc_is_refused_at_decode(subject: str, field: str, moment: str) -> None:
    # Found by tests/integration/test_bad_input.py: such a time passed the model, then converting it to UTC
    # raised OverflowError on every delivery, failing its whole batch until it was dead-lettered as a failure.
    body = {**IDS, "message_id": "m1", "role": "user", "content": "x", "bot_id": "b", "persona_id": "p", "name": "N"}
    with pytest.raises(InvalidMessage, match=rf"{field}: Value error, out of range in UTC"):
        decode_command(subject, json.dumps({**body, field: moment}).encode())
    edge = moment[:4] + ("-01-01T00:00:00Z" if moment.startswith("0001") else "-12-31T23:59:59.999999Z")
    assert getattr(decode_command(subject, json.dumps({**body, field: edge}).encode()), field).year == int(moment[:4])
