"""bench/ingest.py's store reference: batches like ingest's appends, in order, none lost."""

from __future__ import annotations

from bench.ingest import batches


def test_batches_keep_order_and_size() -> None:
    docs = [{"_id": i} for i in range(2_500)]
    chunks = batches(docs, 1_024)
    assert [len(c) for c in chunks] == [1_024, 1_024, 452]
    assert [d for c in chunks for d in c] == docs


def test_batches_of_nothing() -> None:
    assert batches([], 1_024) == []
