"""The points stream's wire format and its deletion subjects (``mnemo/shared/vectors/stream.py``)."""

from __future__ import annotations

import json

import pytest

from mnemo.shared import subjects
from mnemo.shared.sparse import document_vector
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import Match, Range, VectorFilter, VectorPoint
from mnemo.shared.vectors.stream import (
    DELETE,
    UPSERT,
    decode,
    deletion_key,
    encode_upsert,
    filter_to_json,
    split_filter,
)


def test_an_upsert_round_trips_with_float32_vectors_and_its_payload() -> None:
    point = VectorPoint(
        vp.point_id(vp.MESSAGE, "t", "u", "c", "m1", 0),
        [0.25, -1.0, 0.1],
        {"tenant_id": "t", "bot_ids": ["a", "b"], "created_at": 1.5, "chunk": 0, "persona_id": None},
        document_vector("the dragon sleeps"),
    )
    op = decode(encode_upsert(point))
    assert op.kind == UPSERT
    assert op.point is not None
    assert op.point.id == point.id
    assert op.point.payload == point.payload
    assert op.point.vector == pytest.approx(point.vector, abs=1e-7)
    assert op.point.sparse is not None
    assert point.sparse is not None
    assert op.point.sparse.indices == point.sparse.indices
    assert op.point.sparse.values == pytest.approx(point.sparse.values, abs=1e-6)


def test_a_filter_of_several_sources_splits_into_one_deletion_per_source() -> None:
    flt = vp.messages_by_id("t", "u", "c", ["m1", "m2", "m1"])
    parts = split_filter(flt)
    assert parts == [vp.messages_by_id("t", "u", "c", ["m1"]), vp.messages_by_id("t", "u", "c", ["m2"])]
    two_by_two = VectorFilter.where(tenant_id="t").and_(Match("a", ("x", "y")), Match("b", (1, 2)))
    assert len(split_filter(two_by_two)) == 4
    ranged = VectorFilter.where(tenant_id="t").and_(Range("created_at", gte=1.0))
    assert split_filter(ranged) == [ranged]  # nothing to split


def test_the_same_source_deleted_again_gets_the_same_subject() -> None:
    one = VectorFilter(must=(Match("tenant_id", ("t",)), Match("kind", ("message",))))
    same = VectorFilter(must=(Match("kind", ("message",)), Match("tenant_id", ("t",))))
    other = VectorFilter(must=(Match("tenant_id", ("t",)), Match("kind", ("summary",))))
    assert deletion_key(one) == deletion_key(same) != deletion_key(other)
    assert subjects.points_deletion_subject(deletion_key(one)).startswith(subjects.POINTS_PREFIX + ".deletion.")
    # int and str values stay apart (a lore uid 7 is not the keyword "7")
    assert deletion_key(VectorFilter.where(uid=7)) != deletion_key(VectorFilter.where(uid="7"))


def test_a_deletion_round_trips() -> None:
    flt = VectorFilter(
        must=(Match("tenant_id", ("t",)), Range("created_at", gte=1.0, lte=None)),
        must_not=(Match("kind", ("fact",)),),
    )
    op = decode(json.dumps({"op": DELETE, "filter": filter_to_json(flt)}).encode())
    assert op.flt is not None
    assert deletion_key(op.flt) == deletion_key(flt)


def test_subjects_refuse_tokens_that_are_not_one_id() -> None:
    with pytest.raises(ValueError, match="invalid point id"):
        subjects.point_subject("a.b")
    with pytest.raises(ValueError, match="invalid deletion key"):
        subjects.points_deletion_subject("a>")
