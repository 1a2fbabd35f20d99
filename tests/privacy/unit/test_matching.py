"""Which JetStream messages and which MongoDB documents erasure takes for a user or a tenant."""

from __future__ import annotations

import json
from typing import Any

from services.privacy.rows import STREAM_KINDS, USER_STREAM_KINDS, read_model_collections, tenant_rows, user_rows
from services.privacy.stream_purge import owner_of
from shared.events.recorded import (
    bot_stream,
    conversation_stream,
    document_stream,
    knowledge_stream,
    legacy_lore_stream,
    lore_timed_stream,
    lorebook_stream,
    persona_stream,
    privacy_stream,
    summary_stream,
)


def body(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode()


def test_a_chat_payload_is_the_users_by_its_user_id_in_the_tenant() -> None:
    assert owner_of(body({"tenant_id": "t", "user_id": "alice", "content": "hi"})) == ("t", "alice")
    assert owner_of(body({"tenant_id": "t2", "user_id": "alice", "content": "hi"})) == ("t2", "alice")
    assert owner_of(body({"tenant_id": "t", "bot_id": "b", "owner_user_id": "alice"})) == ("t", None), "bots stay"
    assert owner_of(body({"tenant_id": "t", "user_id": 7})) == ("t", None)
    assert owner_of(body({"tenant_id": 1, "user_id": "alice"})) is None
    assert owner_of(json.dumps(["t"]).encode()) is None
    assert owner_of(b"not json") is None
    assert owner_of(b"\xff\xfe") is None


def test_a_log_event_is_its_owners_by_its_type() -> None:
    message = {"tenant_id": "t", "type": "message.deleted", "payload": {"user_id": "alice"}}
    book = {"tenant_id": "t", "type": "lorebook.created", "payload": {"owner_user_id": "alice"}}
    bot = {"tenant_id": "t", "type": "bot.recorded", "payload": {"owner_user_id": "alice"}}
    unknown = {"tenant_id": "t", "type": "nope", "payload": {"user_id": "alice"}}
    owners = [owner_of(body(d)) for d in (message, book, bot, unknown)]
    assert owners == [("t", "alice"), ("t", "alice"), ("t", None), ("t", None)], "a bot stays with its tenant"


def matches(query: dict[str, Any], doc: dict[str, Any]) -> bool:
    """The few operators the erasure queries use, evaluated as MongoDB does on strings."""
    for name, want in query.items():
        have = doc.get(name)
        if isinstance(want, dict):
            if "$in" in want and have not in want["$in"]:
                return False
            if "$gte" in want and not (isinstance(have, str) and want["$gte"] <= have < want["$lt"]):
                return False
        elif have != want:
            return False
    return True


def taken(queries: list[dict[str, Any]], doc: dict[str, Any]) -> bool:
    return any(matches(q, doc) for q in queries)


def test_user_rows_match_owned_documents_stream_ids_and_books_and_nothing_else() -> None:
    queries = user_rows("t/1", "al.ice", ["book-1"])
    mine = [
        {"_id": "x", "tenant_id": "t/1", "user_id": "al.ice"},
        {"_id": "x", "tenant_id": "t/1", "owner_user_id": "al.ice"},
        {"_id": "x", "tenant_id": "t/1", "lorebook_id": "book-1"},
        {"_id": "conversation/t%2F1/al.ice/c1"},
        {"_id": "conversation/t%2F1/al.ice/c1/m/7"},
        {"_id": "persona/t%2F1/al.ice"},
        {"_id": "lore_timed/t%2F1/al.ice/c9"},
        {"_id": "message/t%2F1/al.ice/c1/m1"},
    ]
    others = [
        {"_id": "x", "tenant_id": "t/1", "user_id": "al.ice2"},
        {"_id": "x", "tenant_id": "t/2", "user_id": "al.ice"},
        {"_id": "x", "tenant_id": "t/1", "lorebook_id": "book-2"},
        {"_id": "conversation/t%2F1/al.ice2/c1"},
        {"_id": "conversation/t%2F1/al.ice-b/c1"},  # "-" sorts before "/": outside the range
        {"_id": "conversation/t%2F1/al.icf"},
        {"_id": "conversation/t%2F10/al.ice/c1"},
        {"_id": "bot/t%2F1/al.ice"},  # bots stay on a user's erasure
    ]
    assert [d for d in mine if not taken(queries, d)] == []
    assert [d for d in others if taken(queries, d)] == []
    assert not any("$regex" in str(q) for q in queries), "every query can use an index"


def test_tenant_rows_match_every_stream_kind_of_the_tenant_only() -> None:
    queries = tenant_rows("t")
    assert all(taken(queries, {"_id": f"{kind}/t/anything"}) for kind in STREAM_KINDS)
    assert taken(queries, {"_id": "y", "tenant_id": "t"})
    assert not taken(queries, {"_id": "bot/t2/b", "tenant_id": "t2"})
    assert not taken(queries, {"_id": "bot/t-x/b"})


def test_the_stream_kinds_erasure_knows_are_every_kind_the_log_has() -> None:
    kinds = {
        sid.split("/")[0]
        for sid in (
            bot_stream("t", "b"), conversation_stream("t", "u", "c"), document_stream("t", "d"),
            knowledge_stream("t", "c"), legacy_lore_stream("t", "u", "l"), lore_timed_stream("t", "u", "c"),
            lorebook_stream("t", "b"), persona_stream("t", "u", "p"), privacy_stream("t"),
            summary_stream("t", "u", "c"),
        )
    }  # fmt: skip
    assert kinds <= set(STREAM_KINDS)
    assert set(USER_STREAM_KINDS) <= set(STREAM_KINDS)


def test_the_log_keys_and_bots_are_not_swept_as_read_models() -> None:
    names = ["events", "tenant_keys", "erased_keys", "relay_state", "rm_bots", "rm_messages", "system.views"]
    assert read_model_collections(names, user=True) == ["rm_messages"]
    assert read_model_collections(names, user=False) == ["rm_bots", "rm_messages"]
