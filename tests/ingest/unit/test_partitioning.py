"""Keyed subjects, the partition function and the dealing of partitions among replicas (pure parts)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.services.ingest.cross_order import cross_order_wait_s
from mnemo.services.ingest.handlers import decode_keyed
from mnemo.services.ingest.membership import assign
from mnemo.services.ingest.v1_router import keyed_subject_of, waves
from mnemo.shared import subjects
from mnemo.shared.contract_registry import OPERATIONS
from mnemo.shared.delivery import InvalidMessage, Item
from mnemo.shared.partitions import count_of, parse_durable, partition_of, transform
from mnemo_client.wire.keyed import keyed_subject, subject_token

BODY = {
    "tenant_id": "t.1", "user_id": "u1", "conversation_id": "c 1", "message_id": "m1", "role": "user",
    "author_name": "Ana", "content": "hi", "created_at": "2026-01-01T00:00:00Z",
}  # fmt: skip


class Delivered:
    """Stands for a JetStream message: the router reads its subject."""

    def __init__(self, subject: str) -> None:
        self.subject = subject


def test_a_token_keeps_plain_ids_and_escapes_every_other_byte() -> None:
    assert subject_token("conv-42_a") == "conv-42_a"
    assert subject_token("a.b") == "a%2Eb"
    assert subject_token("x y*>") == "x%20y%2A%3E"
    assert subject_token("%") == "%25"
    assert subject_token("é") == "%C3%A9"


@given(st.text(min_size=1, max_size=80))
def test_a_token_is_one_valid_subject_token_and_distinct_values_stay_distinct(value: str) -> None:
    token = subject_token(value)
    assert token
    assert all((c.isascii() and c.isalnum()) or c in "-_%" for c in token)
    decoded = bytearray()
    i = 0
    while i < len(token):
        if token[i] == "%":
            decoded.append(int(token[i + 1 : i + 3], 16))
            i += 3
        else:
            decoded.append(ord(token[i]))
            i += 1
    assert decoded.decode() == value  # reversible, so two ids never share a token


def test_every_event_has_a_keyed_subject_of_its_tenant_and_key() -> None:
    events = [op for op in OPERATIONS if op.kind == "event"]
    assert events
    assert all(op.key for op in events)
    created = next(op for op in events if op.name == "chat.message.created")
    assert created.keyed_subject == "mnemo.chat.message.created.v2.{tenant_id}.{conversation_id}"
    assert keyed_subject(created.keyed_subject, BODY) == "mnemo.chat.message.created.v2.t%2E1.c%201"
    with pytest.raises(ValueError, match="conversation_id"):
        keyed_subject(created.keyed_subject, {"tenant_id": "t"})


def test_the_transform_names_its_count_and_durables_parse_back() -> None:
    assert count_of(transform(16)) == 16
    assert transform(16).src == subjects.CHAT_KEYED
    assert parse_durable(subjects.partition_durable(16, 3)) == (16, 3)
    assert parse_durable(subjects.INGEST_V1_DURABLE) is None
    stored = "mnemo.ingest.16.3.message.created.v2.t1.c1"
    assert subjects.public_subject(stored) == "mnemo.chat.message.created.v2.t1.c1"
    assert subjects.destination(stored) == "mnemo.ingest.16.3.message.created.v2"
    assert subjects.destination(subjects.MESSAGE_CREATED) == subjects.MESSAGE_CREATED
    assert 0 <= partition_of("t1", "c1", 16) < 16


def test_a_keyed_event_decodes_only_with_its_own_tenant_and_key() -> None:
    data = json.dumps(BODY).encode()
    right = f"mnemo.ingest.16.{partition_of('t%2E1', 'c%201', 16)}.message.created.v2.t%2E1.c%201"
    assert decode_keyed(right, data).message_id == "m1"
    with pytest.raises(InvalidMessage, match=r"publish it on 'mnemo\.chat\.message\.created\.v2\.t%2E1\.c%201'"):
        decode_keyed("mnemo.ingest.16.0.message.created.v2.t%2E1.other", data)
    with pytest.raises(InvalidMessage, match="unknown subject"):
        decode_keyed("mnemo.ingest.16.0.message.teleported.v2.t%2E1.c%201", data)


def test_partitions_are_dealt_evenly_and_each_to_exactly_one_member() -> None:
    work = ["v1", *range(16)]
    members = ["a", "b", "c"]
    shares = {m: assign(members, work, m) for m in members}
    assert sorted(x for share in shares.values() for x in share if x != "v1") == list(range(16))
    assert sorted(len(s) for s in shares.values()) == [5, 6, 6]
    assert assign([], work, "a") == work  # alone (its own key not listed yet): everything


def test_the_router_publishes_a_conversation_wave_after_wave() -> None:
    from mnemo.services.ingest.handlers import decode_command

    def cmd(conv: str, message: str, subject: str = subjects.MESSAGE_CREATED) -> object:
        return decode_command(subject, json.dumps({**BODY, "conversation_id": conv, "message_id": message}).encode())

    commands = [cmd("a", "1"), cmd("b", "1"), cmd("a", "2"), cmd("a", "3"), cmd("b", "2")]
    batch = [Item(c, Delivered(subjects.MESSAGE_CREATED)) for c in commands]  # type: ignore[arg-type]
    planned = waves(batch)
    assert [[i.value.message_id + i.value.conversation_id for i, _ in wave] for wave in planned] == [  # type: ignore[attr-defined]
        ["1a", "1b"],
        ["2a", "2b"],
        ["3a"],
    ]
    assert keyed_subject_of(subjects.MESSAGE_CREATED, commands[0]) == "mnemo.chat.message.created.v2.t%2E1.a"  # type: ignore[arg-type]


def test_a_fork_waits_for_its_parent_partition_through_a_takeover_and_no_longer() -> None:
    # A takeover: the dead replica's lease runs out, then its batch is redelivered after ack_wait and recorded.
    for ack_wait_s, lease_ttl_s in [(30.0, 10.0), (5.0, 2.0), (120.0, 30.0)]:
        bound = cross_order_wait_s(ack_wait_s, lease_ttl_s)
        assert lease_ttl_s + ack_wait_s < bound <= lease_ttl_s + 2 * ack_wait_s
    assert cross_order_wait_s(30.0, 10.0) < 120  # two forks waiting on each other must not stall ingest for minutes
