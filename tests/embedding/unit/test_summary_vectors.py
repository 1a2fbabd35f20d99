"""Summary vectors (pure plan): audience and type in the payload, chunking, retirement deletes."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from mnemo.services.embedding.domain import plan_batch
from mnemo.services.embedding.plan import Plan
from mnemo.services.embedding.summaries import SUMMARY_CHUNK_OVERLAP, SUMMARY_CHUNK_TOKENS, summary_chunks
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import SummaryCreated, SummaryRetired, summary_stream
from mnemo.shared.tokens import estimate_tokens
from mnemo.shared.vectors.points import point_id, summaries_by_id
from tests.envelopes import numbered

T0 = datetime(2026, 3, 1, tzinfo=UTC)
LONG = " ".join(f"Sentence {i} tells how the caravan crossed the salt flats and counted the wells." for i in range(60))


def created(
    sid: str, version: int, text: str = "Ana found a key.", audience: tuple[str, ...] = ("bard",)
) -> EventEnvelope:
    payload = SummaryCreated(
        summary_id=sid,
        user_id="u",
        conversation_id="c",
        summary_type="consolidated",
        text=text,
        importance=5,
        participants=["bard", "ana"],
        start_at=T0,
        end_at=T0 + timedelta(minutes=5),
        message_ids=["m1", "m2"],
        first_index=0,
        last_index=1,
        method="extractive",
        audience=list(audience),
    )
    return envelope(version, "summary.created", payload.model_dump(mode="json"))


def retired(sid: str, version: int) -> EventEnvelope:
    payload = SummaryRetired(
        summary_id=sid, user_id="u", conversation_id="c", reason="consolidated", replaced_by="x", retired_at=T0
    )
    return envelope(version, "summary.retired", payload.model_dump(mode="json"))


def envelope(version: int, type_: str, payload: dict[str, object]) -> EventEnvelope:
    return numbered("t", summary_stream("t", "u", "c"), version, type_, payload, T0)


def plan(events: list[EventEnvelope], inactive: set[str] | None = None) -> Plan:
    return plan_batch(events, {}, model="m", chunker=lambda t: [t], inactive_summaries=inactive)


def test_points_carry_audience_and_type():
    [point] = plan([created("s1", 1, audience=("bard", "ana"))]).points
    assert point.id == point_id("summary", "t", "u", "c", "s1", 0)
    assert point.payload["audience"] == ["bard", "ana"]
    assert point.payload["summary_type"] == "consolidated"
    assert point.payload["kind"] == "summary"
    assert "key" not in str(point.payload), "no text in the payload"


def test_long_summaries_are_chunked_with_overlap():
    chunks = summary_chunks(LONG)
    assert len(chunks) > 2
    assert all(estimate_tokens(c) <= SUMMARY_CHUNK_TOKENS for c in chunks)
    assert all(estimate_tokens(c) >= SUMMARY_CHUNK_TOKENS // 2 for c in chunks[:-1])
    for a, b in itertools.pairwise(chunks):
        tail = a.split()[-3:]
        assert " ".join(tail) in b, "consecutive chunks overlap"
        assert estimate_tokens(b[: b.index(" ".join(tail)) + len(" ".join(tail))]) <= SUMMARY_CHUNK_OVERLAP + 10
    points = plan([created("s1", 1, text=LONG)]).points
    assert [p.payload["chunk"] for p in points] == list(range(len(chunks)))


def test_retirement_deletes_the_summarys_points():
    p = plan([retired("s1", 5)])
    assert p.points == []
    assert p.deletions == [summaries_by_id("t", "u", "c", ["s1"])]


def test_created_then_retired_in_one_batch_is_not_indexed():
    p = plan([created("s1", 1), created("s2", 2), retired("s1", 3)])
    assert {pt.payload["summary_id"] for pt in p.points} == {"s2"}


def test_a_creation_the_read_model_shows_retired_is_skipped():
    assert plan([created("s1", 1)], inactive={"s1"}).points == []
