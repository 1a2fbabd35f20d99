"""``bench/context_bulk.py``: batches of the service's shape, the texts in turn, embedded back to back only
while the block runs (on a fake embedder behind the port; the bundled one runs it in ``make bench-context``)."""

from __future__ import annotations

import asyncio

import pytest

from bench.context_bulk import BulkEmbedding
from tests.fakes.embedders import RecordingEmbedder


async def test_batches_run_back_to_back_only_inside_the_block() -> None:
    embedder = RecordingEmbedder()
    async with BulkEmbedding(embedder, ["a", "b", "c"], size=2) as bulk:
        for _ in range(20):
            await asyncio.sleep(0)
    done = len(embedder.calls)
    for _ in range(20):
        await asyncio.sleep(0)
    assert done >= 3
    assert len(embedder.calls) == done == bulk.batches  # nothing after the block
    assert embedder.calls[:3] == [["a", "b"], ["c", "a"], ["b", "c"]]


def test_no_texts_or_an_empty_batch_is_refused() -> None:
    with pytest.raises(ValueError, match="needs texts"):
        BulkEmbedding(RecordingEmbedder(), [], size=2)
    with pytest.raises(ValueError, match="batch size"):
        BulkEmbedding(RecordingEmbedder(), ["a"], size=0)
