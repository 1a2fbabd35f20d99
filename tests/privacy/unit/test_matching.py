"""Which JetStream messages and which MongoDB documents erasure takes for a user or a tenant."""

from __future__ import annotations

import json
from typing import Any

from mnemo.services.privacy.stream_purge import owner_of
from mnemo.shared.readmodels import catalog
from mnemo.shared.readmodels.rows import owned_by
from mnemo.shared.usage import COLLECTION


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


def test_a_users_rows_are_theirs_by_owner_stream_id_or_book_and_nothing_else_is() -> None:
    def theirs(**doc: Any) -> bool:
        return owned_by("t/1", "al.ice", ["book-1"])(doc)

    assert theirs(_id="x", user_id="al.ice")
    assert theirs(_id="x", owner_user_id="al.ice")
    assert theirs(_id="x", lorebook_id="book-1", target="bot:b"), "their book's attachments go with it"
    assert theirs(_id="lore_timed/t%2F1/al.ice/c1"), "a row keyed by their stream id only"
    assert theirs(_id="persona/t%2F1/al.ice")
    assert not theirs(_id="lore_timed/t%2F1/al.ice2/c1"), "another user whose id starts like theirs"
    assert not theirs(_id="lore_timed/t/1/al.ice/c1"), "another tenant's (ids are percent-encoded)"
    assert not theirs(_id="bot/t%2F1/al.ice"), "not a user's stream kind"
    assert not theirs(_id="x", user_id="bob", lorebook_id="book-2")
    assert not theirs(_id={"odd": 1}, lorebook_id=["book-1"]), "odd values are nobody's"


def test_usage_rows_go_with_the_tenant_and_stay_when_one_user_is_erased() -> None:
    """A tenant's usage days (mnemo/shared/usage.py) name no user: billing keeps them past a user's erasure."""
    assert COLLECTION in {c.name for c in catalog.erasable()}
    day = {"_id": "t|2026-11-26", "tenant_id": "t", "day": "2026-11-26", "context_requests": 3}
    assert not owned_by("t", "alice", [])(day)
