"""Which JetStream messages and which MongoDB documents erasure takes for a user or a tenant."""

from __future__ import annotations

import json
from typing import Any

from services.privacy.rows import read_model_collections, user_rows
from services.privacy.stream_purge import belongs_to


def body(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode()


def test_a_chat_payload_is_the_users_by_its_user_id_in_the_tenant() -> None:
    alice = belongs_to("t", "alice")
    assert alice(body({"tenant_id": "t", "user_id": "alice", "content": "hi"}))
    assert not alice(body({"tenant_id": "t", "user_id": "bob", "content": "hi"}))
    assert not alice(body({"tenant_id": "t2", "user_id": "alice", "content": "hi"}))
    assert not alice(body({"tenant_id": "t", "bot_id": "b", "owner_user_id": "alice"})), "bots stay"
    assert not alice(b"not json")


def test_a_log_event_is_its_owners_by_its_type() -> None:
    alice = belongs_to("t", "alice")
    message = {"tenant_id": "t", "type": "message.deleted", "payload": {"user_id": "alice"}}
    book = {"tenant_id": "t", "type": "lorebook.created", "payload": {"owner_user_id": "alice"}}
    bot = {"tenant_id": "t", "type": "bot.recorded", "payload": {"owner_user_id": "alice"}}
    unknown = {"tenant_id": "t", "type": "nope", "payload": {"user_id": "alice"}}
    assert [alice(body(d)) for d in (message, book, bot, unknown)] == [True, True, False, False]


def test_a_tenant_erasure_takes_every_message_of_the_tenant_only() -> None:
    tenant = belongs_to("t", None)
    assert tenant(body({"tenant_id": "t", "bot_id": "b"}))
    assert not tenant(body({"tenant_id": "t2", "bot_id": "b"}))


def test_user_rows_match_owned_documents_stream_ids_and_books() -> None:
    query = user_rows("t/1", "al.ice", ["book-1"])
    stream_match = query["$or"][3]["_id"]["$regex"]
    assert stream_match == r"^(conversation|persona|summaries|legacy_lore|lore_timed)/t%2F1/al\.ice(/|$)"
    assert {"tenant_id": "t/1", "lorebook_id": {"$in": ["book-1"]}} in query["$or"]


def test_the_log_keys_and_bots_are_not_swept_as_read_models() -> None:
    names = ["events", "tenant_keys", "erased_keys", "relay_state", "rm_bots", "rm_messages", "system.views"]
    assert read_model_collections(names, user=True) == ["rm_messages"]
    assert read_model_collections(names, user=False) == ["rm_bots", "rm_messages"]
