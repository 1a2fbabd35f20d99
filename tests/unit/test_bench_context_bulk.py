"""``bench/context_bulk.py``: batches of the service's shape, the texts in turn, embedded back to back only
while the block runs (on a fake embedder behind the port; the bundled one runs it in ``make bench-context``)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from bench.context_bulk import BulkEmbedding


class CountingEmbedder:
    dimensions = 2
    model_id = "counting"

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.batches.append(list(texts))
        await asyncio.sleep(0)
        return [[1.0, 0.0] for _ in texts]


async def test_batches_run_back_to_back_only_inside_the_block() -> None:
    embedder = CountingEmbedder()
    async with BulkEmbedding(embedder, ["a", "b", "c"], size=2) as bulk:
        for _ in range(20):
            await asyncio.sleep(0)
    done = len(embedder.batches)
    for _ in range(20):
        await asyncio.sleep(0)
    assert done >= 3
    assert len(embedder.batches) == done == bulk.batches  # nothing after the block
    assert embedder.batches[:3] == [["a", "b"], ["c", "a"], ["b", "c"]]


def test_no_texts_or_an_empty_batch_is_refused() -> None:
    with pytest.raises(ValueError, match="needs texts"):
        BulkEmbedding(CountingEmbedder(), [], size=2)
    with pytest.raises(ValueError, match="batch size"):
        BulkEmbedding(CountingEmbedder(), ["a"], size=0)
