"""Envelope helpers: upcaster chains, deterministic ids, stream ids."""

from __future__ import annotations

from datetime import UTC, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from mnemo.shared.eventlog.codec import EventCodec, envelope_of, normalized_envelope_of
from mnemo.shared.events.envelope import (
    EventRegistry,
    NewEvent,
    UnknownEventType,
    UnknownSchemaVersion,
    deterministic_id,
    stream_id,
    stream_parts,
)
from mnemo.shared.events.recorded import (
    REGISTRY,
    LorebookEntryCreated,
    LorebookEntryUpdated,
    LorebookEntryWritten,
    RecordedPayload,
    new_event,
)
from mnemo.shared.tokens import estimate_tokens


class Anything(BaseModel):
    model_config = ConfigDict(extra="allow")


def chained_registry() -> EventRegistry:
    reg = EventRegistry()
    reg.register(
        "thing.happened",
        Anything,
        schema_version=3,
        upcasters={
            1: lambda p: {**p, "b": p["a"] * 2},
            2: lambda p: {**{k: v for k, v in p.items() if k != "a"}, "c": p["b"] + 1},
        },
    )
    return reg


def test_upcasters_chain_from_any_old_version_to_the_current_one() -> None:
    et = chained_registry().get("thing.happened")

    assert et.upcast(1, {"a": 5}) == {"b": 10, "c": 11}
    assert et.upcast(2, {"a": 5, "b": 7}) == {"b": 7, "c": 8}
    assert et.upcast(3, {"b": 1, "c": 2}) == {"b": 1, "c": 2}


def test_upcasting_does_not_mutate_the_stored_payload() -> None:
    stored = {"a": 1}
    chained_registry().get("thing.happened").upcast(1, stored)
    assert stored == {"a": 1}


def test_version_newer_than_the_code_is_refused() -> None:
    with pytest.raises(UnknownSchemaVersion, match="newer"):
        chained_registry().get("thing.happened").upcast(4, {})


def test_missing_upcaster_in_the_chain_is_refused() -> None:
    reg = EventRegistry()
    et = reg.register("gap.type", Anything, schema_version=3, upcasters={2: lambda p: p})
    with pytest.raises(UnknownSchemaVersion, match="v1 -> v2"):
        et.upcast(1, {})


def test_unknown_type_and_double_registration_are_errors() -> None:
    reg = chained_registry()
    with pytest.raises(UnknownEventType):
        reg.get("nope")
    with pytest.raises(ValueError, match="twice"):
        reg.register("thing.happened", Anything)


def test_message_recorded_v1_gains_a_token_estimate() -> None:
    payload = REGISTRY.get("message.recorded").upcast(1, {"content": "hello there, old friend"})
    assert payload["tokens"] == estimate_tokens("hello there, old friend")


def test_deterministic_id_is_stable_and_sensitive_to_each_part() -> None:
    # Pinned: a change of namespace or joiner would silently turn every redelivery into a new event.
    assert deterministic_id("t", "m1") == "0c5224d0-cac4-5478-b7b1-2b53eaf6bbb1"
    assert deterministic_id("t", "m1") != deterministic_id("t", "m2")
    assert deterministic_id("a", "bc") != deterministic_id("ab", "c")


_part = st.text(min_size=1, max_size=20)


@given(kind=st.from_regex(r"[a-z]{1,10}", fullmatch=True), parts=st.lists(_part, min_size=1, max_size=4))
def test_stream_id_round_trips_any_parts(kind: str, parts: list[str]) -> None:
    sid = stream_id(kind, *parts)
    assert stream_parts(sid) == (kind, parts)


@given(a=st.lists(_part, min_size=1, max_size=3), b=st.lists(_part, min_size=1, max_size=3))
def test_distinct_parts_never_share_a_stream_id(a: list[str], b: list[str]) -> None:
    if a != b:
        assert stream_id("k", *a) != stream_id("k", *b)


def test_stream_id_needs_a_part() -> None:
    with pytest.raises(ValueError, match="at least one"):
        stream_id("conversation")


def test_every_registered_type_parses_its_payload_into_its_model() -> None:
    from mnemo.shared.events.recorded import (
        LOREBOOK_ENTRY_UPDATED,
        MESSAGE_DELETED,
        LorebookEntryUpdated,
        MessageDeletionRecorded,
    )

    payload = {"user_id": "u", "conversation_id": "c", "message_id": "m", "deleted_at": "2024-05-01T12:00:00Z"}
    parsed = MESSAGE_DELETED.parse(payload)
    assert isinstance(parsed, MessageDeletionRecorded)
    assert parsed.message_id == "m"
    assert LOREBOOK_ENTRY_UPDATED.model is LorebookEntryUpdated
    assert REGISTRY.of(LorebookEntryUpdated) is LOREBOOK_ENTRY_UPDATED
    for name in REGISTRY.names():
        assert issubclass(REGISTRY.get(name).model, RecordedPayload), name


# What the stored form depends on, pinned: name, schema version and encrypted fields of every type.
STORED_FORM = {
    "bot.recorded": (1, {"name", "system_prompt", "gender", "age"}),
    "conversation.forked": (1, set()),
    "erasure.completed": (1, set()),
    "knowledge.fact_learned": (1, {"text", "subject", "tags"}),
    "knowledge.fact_promoted": (1, set()),
    "knowledge.fact_retired": (1, set()),
    "knowledge.fact_unpromoted": (1, set()),
    "knowledge.facts_consolidated": (1, {"text", "subject", "tags"}),
    "knowledge.witnessed": (1, set()),
    "legacy_lore.created": (1, {"title", "text", "emotional_tags"}),
    "legacy_lore.deleted": (1, set()),
    "lore.timed_state_recorded": (1, set()),
    "lorebook.attached": (1, set()),
    "lorebook.created": (1, {"name", "description"}),
    "lorebook.deleted": (1, set()),
    "lorebook.detached": (1, set()),
    "lorebook.entry_created": (1, {"entry"}),
    "lorebook.entry_deleted": (1, set()),
    "lorebook.entry_updated": (1, {"entry"}),
    "lorebook.imported": (1, {"name", "book", "original", "warnings"}),
    "lorebook.renamed": (1, {"name"}),
    "message.alternative_deleted": (1, set()),
    "message.alternative_recorded": (1, {"content"}),
    "memory.remembered": (1, {"title", "content", "tags", "assets", "metadata"}),
    "memory.updated": (1, {"title", "content", "tags", "assets", "metadata"}),
    "memory.forgotten": (1, {"reason"}),
    "document.accepted": (1, {"name"}),
    "document.chunked": (1, {"chunks"}),
    "document.completed": (1, set()),
    "document.failed": (1, {"reason"}),
    "document.deleted": (1, set()),
    "message.deleted": (1, set()),
    "message.edited": (1, {"content"}),
    "message.recorded": (2, {"author_name", "content"}),
    "persona.recorded": (1, {"name", "description", "traits", "instructions"}),
    "summary.created": (1, {"text", "emotional_context"}),
    "summary.retired": (1, set()),
}


def test_the_registry_keeps_every_types_stored_form() -> None:
    registered = {n: (REGISTRY.get(n).schema_version, set(REGISTRY.get(n).encrypted_fields)) for n in REGISTRY.names()}
    assert registered == STORED_FORM


#: Whose data key encrypts each type and whose erasure erases it (docs/privacy.md): a type missing here is
#: the tenant's (bots, book deletions and attachments, the erasure record itself).
KEY_OWNERS = {
    "knowledge.fact_learned": "user_id",
    "knowledge.fact_promoted": "owner_user_id",
    "knowledge.fact_retired": "user_id",
    "knowledge.fact_unpromoted": "owner_user_id",
    "knowledge.facts_consolidated": "user_id",
    "knowledge.witnessed": "user_id",
    "legacy_lore.created": "user_id",
    "legacy_lore.deleted": "user_id",
    "lore.timed_state_recorded": "user_id",
    "lorebook.created": "owner_user_id",
    "lorebook.entry_created": "owner_user_id",
    "lorebook.entry_updated": "owner_user_id",
    "document.accepted": "owner_user_id",  # the uploader: erasing them shreds the document's text
    "document.chunked": "owner_user_id",
    "lorebook.imported": "owner_user_id",
    "lorebook.renamed": "owner_user_id",
    "conversation.forked": "user_id",
    "memory.remembered": "user_id",  # the memory's owner, whoever changed it (``by_user_id``)
    "memory.updated": "user_id",
    "memory.forgotten": "user_id",
    "message.alternative_deleted": "user_id",
    "message.alternative_recorded": "user_id",
    "message.deleted": "user_id",
    "message.edited": "user_id",
    "message.recorded": "user_id",
    "persona.recorded": "user_id",
    "summary.created": "user_id",
    "summary.retired": "user_id",
}


def test_every_user_owned_type_names_its_owner_and_the_field_exists() -> None:
    owners = {n: REGISTRY.get(n).key_owner for n in REGISTRY.names() if REGISTRY.get(n).key_owner}
    assert owners == KEY_OWNERS
    for name, owner in owners.items():
        assert owner in REGISTRY.get(name).model.model_fields, name


def test_registry_payload_parses_an_envelope_by_its_type() -> None:
    from datetime import UTC, datetime

    from mnemo.shared.events.recorded import MessageDeletionRecorded
    from tests.envelopes import numbered

    at = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    payload = {"user_id": "u", "conversation_id": "c", "message_id": "m", "deleted_at": at.isoformat()}
    env = numbered("t", "conversation/t/u/c", 1, "message.deleted", payload, at)
    assert REGISTRY.payload(env) == MessageDeletionRecorded(
        user_id="u", conversation_id="c", message_id="m", deleted_at=at
    )
    with pytest.raises(UnknownEventType):
        REGISTRY.payload(env.model_copy(update={"type": "nope"}))


def test_an_event_takes_its_type_from_its_payload_class() -> None:
    """Two types sharing a base class stay apart, and a class no type is registered for is refused."""
    fields = {"lorebook_id": "b", "uid": 1, "entry": {"content": "x"}, "at": "2026-11-26T00:00:00Z"}
    created = new_event(LorebookEntryCreated(**fields), tenant_id="t", event_id="e1")
    updated = new_event(LorebookEntryUpdated(**fields), tenant_id="t", causation_id="e1")
    assert (created.type, updated.type) == ("lorebook.entry_created", "lorebook.entry_updated")
    assert (created.event_id, created.causation_id, updated.causation_id) == ("e1", None, "e1")
    assert created.payload == {**fields, "at": "2026-11-26T00:00:00Z", "owner_user_id": None}
    with pytest.raises(UnknownEventType):
        new_event(LorebookEntryWritten(**fields), tenant_id="t")


@given(
    occurred=st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30))])),
    recorded=st.datetimes(),  # naive: taken to be UTC
    at=st.datetimes(timezones=st.just(UTC)),
)
def test_an_envelope_built_normalized_is_the_normalized_envelope(occurred, recorded, at):
    event = NewEvent(
        event_id="e1", type="message.recorded", tenant_id="t", occurred_at=occurred, traceparent=None,
        payload={"message_id": "m1", "created_at": at, "bot_ids": ["b"], "nested": {"at": at, "n": 3}},
    )  # fmt: skip
    codec = EventCodec(REGISTRY, None)  # type: ignore[arg-type]  # no encryption involved

    built = normalized_envelope_of(event, "conversation:t:u:c", 7, recorded, 1)

    # As JSON: equal datetimes in different time zones compare equal, their offsets do not.
    assert (
        built.model_dump_json()
        == codec.normalize(envelope_of(event, "conversation:t:u:c", 7, recorded, 1)).model_dump_json()
    )
