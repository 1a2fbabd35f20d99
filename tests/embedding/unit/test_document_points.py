"""The embedding service's document chunks (``mnemo/services/embedding/documents.py``): what is embedded and what
is deleted for each ``document.*`` event, given the documents read model's view."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from mnemo.services.embedding.documents import DocState, embedded, plan_documents
from mnemo.services.embedding.plan import Plan
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import DocumentChunk, document_stream
from mnemo.shared.vectors import points as vp
from tests.envelopes import recorded

T0 = datetime(2026, 5, 1, tzinfo=UTC)
T, DOC, BOOK = "t1", "doc-1", "book-1"


def env(type_: str, payload: dict[str, Any]) -> EventEnvelope:
    return recorded(T, document_stream(T, DOC), 1, type_, {"document_id": DOC, **payload}, T0)


def chunked(version: int, *hashes: str) -> EventEnvelope:
    chunks = [
        {"index": i, "text": f"text {h}", "heading": "Ch. 1", "page": i + 1, "hash": h} for i, h in enumerate(hashes)
    ]
    payload = {"version": version, "part": 0, "parts": 1, "total_chunks": len(hashes), "chunks": chunks}
    return env("document.chunked", payload)


def plan(event: EventEnvelope, state: DocState | None) -> Plan:
    out = Plan()
    plan_documents([event], out, model="m", states={(T, DOC): state} if state else {})
    return out


V1_ACTIVE_V2_PENDING = DocState(BOOK, version=2, active_version=1, deleted=False, active_hashes=frozenset({"a", "b"}))


def test_a_new_version_embeds_only_the_chunks_not_already_indexed() -> None:
    points = plan(chunked(2, "a", "c"), V1_ACTIVE_V2_PENDING).points
    assert [p.payload[vp.CHUNK_HASH] for p in points] == ["c"], "chunk `a` is unchanged: its point stays"
    [p] = points
    assert p.id == vp.document_point_id(T, DOC, "c")
    assert p.text == "Ch. 1\n\ntext c", "the heading path is embedded with the text"
    assert {p.payload[k] for k in (vp.TENANT_ID, vp.KIND, vp.LOREBOOK_ID, vp.DOCUMENT_ID)} == {
        T,
        vp.DOCUMENT_CHUNK,
        BOOK,
        DOC,
    }
    assert (p.payload[vp.CHUNK], p.payload[vp.TOTAL_CHUNKS], p.payload[vp.PAGE]) == (1, 2, 2)


def test_the_active_version_is_embedded_whole_as_replay_does() -> None:
    state = DocState(BOOK, version=1, active_version=1, deleted=False, active_hashes=frozenset({"a", "b"}))
    assert [p.payload[vp.CHUNK_HASH] for p in plan(chunked(1, "a", "b"), state).points] == ["a", "b"]


def test_a_stale_version_or_a_deleted_document_embeds_nothing() -> None:
    assert plan(chunked(1, "x"), DocState(BOOK, 3, 2, False, frozenset())).points == []
    gone = plan(chunked(1, "x"), DocState(BOOK, 1, None, True, frozenset()))
    assert gone.points == []
    assert gone.deletions == [vp.document_chunks(T, DOC)]


def test_completion_retires_the_other_versions_points_and_failure_the_unfinished_ones() -> None:
    done = env(
        "document.completed", {"version": 2, "pages": 3, "chunks": 2, "tokens": 9, "hashes": ["a", "c"], "at": T0}
    )
    completed = DocState(BOOK, 2, 2, False, frozenset({"a", "c"}))
    assert plan(done, completed).deletions == [vp.document_chunks(T, DOC, ["a", "c"])]
    failed = env("document.failed", {"version": 2, "reason": "damaged", "at": T0})
    assert plan(failed, V1_ACTIVE_V2_PENDING).deletions == [vp.document_chunks(T, DOC, ["a", "b"])]
    deleted = env("document.deleted", {"at": T0})
    assert plan(deleted, V1_ACTIVE_V2_PENDING).deletions == [vp.document_chunks(T, DOC)]


def test_the_embedded_text_is_what_the_lore_service_hashes() -> None:
    from mnemo.services.lore.documents.chunks import DocChunk

    shown = DocChunk(0, "Red dragons breathe fire.", "Dragons > Red", 4, 8)
    assert embedded(DocumentChunk(index=0, text=shown.text, heading=shown.heading, hash=shown.hash)) == shown.embedded
