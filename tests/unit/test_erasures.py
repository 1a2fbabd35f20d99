"""What replay hides after an erasure: the erased user's (tenant's, book's) events recorded before it, nothing else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from mnemo.shared.eventlog.erasures import Erasures
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import REGISTRY, document_stream, lorebook_stream, privacy_stream
from tests.envelopes import numbered

T0 = datetime(2026, 5, 1, tzinfo=UTC)
ERASED_AT = T0 + timedelta(hours=1)


def erasure(
    tenant: str, user: str | None, books: list[str] | None = None, documents: list[str] | None = None
) -> EventEnvelope:
    payload = {"erasure_id": "x", "user_id": user, "key_ids": ["k"], "deleted": {}, "lorebook_ids": books or [],
               "document_ids": documents or [], "erased_at": ERASED_AT.isoformat()}  # fmt: skip
    return numbered(tenant, privacy_stream(tenant), 1, "erasure.completed", payload, ERASED_AT)


def event(tenant: str, type_: str, payload: dict[str, Any], at: datetime, stream: str = "s") -> EventEnvelope:
    return numbered(tenant, stream, 1, type_, payload, at)


def deleted(tenant: str, user: str, at: datetime) -> EventEnvelope:
    payload = {"user_id": user, "conversation_id": "c", "message_id": "m", "deleted_at": at.isoformat()}
    return event(tenant, "message.deleted", payload, at)


def test_hides_the_erased_users_plaintext_events_recorded_before_the_erasure() -> None:
    erasures = Erasures.of(REGISTRY, [erasure("t", "alice")])
    assert erasures.hides(deleted("t", "alice", T0))
    assert not erasures.hides(deleted("t", "alice", ERASED_AT + timedelta(seconds=1))), "written after: kept"
    assert not erasures.hides(deleted("t", "bob", T0)), "another user"
    assert not erasures.hides(deleted("t2", "alice", T0)), "the same id in another tenant"
    promoted = {"fact_id": "f", "character_id": "b", "owner_user_id": "alice", "by_user_id": "alice",
                "from_scope": "player:alice", "to_scope": "campaign:x", "at": T0.isoformat()}  # fmt: skip
    assert erasures.hides(event("t", "knowledge.fact_promoted", promoted, T0)), "owner named by owner_user_id"


def test_keeps_bots_the_erased_user_created_and_the_erasure_record() -> None:
    erasures = Erasures.of(REGISTRY, [erasure("t", "alice")])
    bot = {"bot_id": "b", "owner_user_id": "alice", "name": "n", "system_prompt": "", "gender": None, "age": None,
           "updated_at": T0.isoformat()}  # fmt: skip
    assert not erasures.hides(event("t", "bot.recorded", bot, T0))
    assert not erasures.hides(erasure("t", "alice"))


def test_hides_a_whole_tenant_and_an_erased_users_books() -> None:
    erasures = Erasures.of(REGISTRY, [erasure("t", None), erasure("t3", "alice", ["book"])])
    assert erasures.hides(deleted("t", "anyone", T0))
    entry_deleted = {"lorebook_id": "book", "uid": 1, "at": T0.isoformat()}
    assert erasures.hides(event("t3", "lorebook.entry_deleted", entry_deleted, T0, lorebook_stream("t3", "book")))
    assert not erasures.hides(event("t3", "lorebook.entry_deleted", entry_deleted, T0, lorebook_stream("t3", "other")))
    assert not Erasures.of(REGISTRY, [deleted("t", "alice", T0)]), "no erasure event: hides nothing"


def test_hides_every_event_of_an_erased_users_documents() -> None:
    erasures = Erasures.of(REGISTRY, [erasure("t", "alice", documents=["d1"])])
    completed = {"document_id": "d1", "version": 1, "pages": 3, "chunks": 2, "tokens": 90, "hashes": ["a", "b"],
                 "at": T0.isoformat()}  # fmt: skip
    assert erasures.hides(event("t", "document.completed", completed, T0, document_stream("t", "d1")))
    other = {**completed, "document_id": "d2"}
    assert not erasures.hides(event("t", "document.completed", other, T0, document_stream("t", "d2")))
    chunked = {"document_id": "d2", "version": 1, "part": 0, "parts": 1, "total_chunks": 0, "chunks": [],
               "owner_user_id": "alice"}  # fmt: skip
    assert erasures.hides(event("t", "document.chunked", chunked, T0, document_stream("t", "d2"))), "by its owner"
