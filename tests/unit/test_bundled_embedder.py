"""The bundled model, run for real on onnxruntime (no mocks): shape, normalisation, order, meaning."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.shared.embedders.bundled import (
    DIMENSIONS,
    MAX_TOKENS,
    SMALL_BATCH,
    SMALL_CHARS,
    TOKENS_PER_ROW,
    BundledEmbedder,
    padded_batches,
    tokenized_holding_the_gil,
)
from mnemo.shared.embedders.factory import build_embedder
from mnemo.shared.settings import EmbedderSettings, Settings


@pytest.fixture(scope="module")
def embedder() -> BundledEmbedder:
    return BundledEmbedder(batch_size=4)


def cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


async def test_dimensions_model_id_and_unit_norm(embedder: BundledEmbedder) -> None:
    vecs = await embedder.embed(["hello world", "", "A much longer sentence about something else entirely."])
    assert embedder.dimensions == DIMENSIONS == 384
    assert embedder.model_id == "all-MiniLM-L6-v2-int8-onnx"
    assert [len(v) for v in vecs] == [384, 384, 384]
    assert np.allclose(np.linalg.norm(np.array(vecs), axis=1), 1.0, atol=1e-5)


async def test_empty_list(embedder: BundledEmbedder) -> None:
    assert await embedder.embed([]) == []
    assert embedder.embed_sync([]) == []


async def test_order_is_restored_after_length_sorting(embedder: BundledEmbedder) -> None:
    # Lengths in decreasing order across several batches, so sorting really permutes them.
    texts = [("word " * n).strip() + f" item {n}" for n in (60, 3, 45, 1, 30, 12, 7, 50, 2, 20)]
    together = await embedder.embed(texts)
    alone = [embedder.embed_sync([t])[0] for t in texts]
    assert np.allclose(np.array(together), np.array(alone), atol=1e-4)


def test_a_few_texts_get_the_vectors_a_large_batch_gives(embedder: BundledEmbedder) -> None:
    # A few short texts are tokenized one by one (``encode``), others in one ``encode_batch``: same word
    # pieces, special tokens and truncation at MAX_TOKENS, so the same vectors.
    few = ["why?", "a " * (MAX_TOKENS + 40), "", "Did Kate ever see the northern lights in Norway?"][:SMALL_BATCH]
    assert tokenized_holding_the_gil(few)
    filler = [f"another line, number {i}" for i in range(SMALL_BATCH + 1)]
    assert np.allclose(embedder.embed_array(few), embedder.embed_array([*few, *filler])[: len(few)], atol=1e-4)


def test_only_few_short_texts_are_tokenized_holding_the_gil() -> None:
    # A long message (the contract allows 100,000 characters) must not hold the GIL while it is tokenized:
    # every other request of the process would wait for it.
    assert tokenized_holding_the_gil(["why?"] * SMALL_BATCH)
    assert not tokenized_holding_the_gil(["why?"] * (SMALL_BATCH + 1))
    assert tokenized_holding_the_gil(["x" * SMALL_CHARS])
    assert not tokenized_holding_the_gil(["x" * (SMALL_CHARS + 1)])
    assert not tokenized_holding_the_gil(["x" * (SMALL_CHARS // 2 + 1)] * 2)


async def test_paraphrase_is_closer_than_unrelated(embedder: BundledEmbedder) -> None:
    food, bread, baby, cat, dog, stocks = await embedder.embed(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "The girl is carrying a baby.",
            "My cat sleeps on the sofa all afternoon.",
            "The kitten naps on the couch during the day.",
            "Quarterly earnings beat analyst expectations.",
        ]
    )
    assert cos(food, bread) > 0.6 > cos(food, baby)
    assert cos(cat, dog) > cos(cat, stocks) + 0.3


async def test_long_text_is_truncated_not_rejected(embedder: BundledEmbedder) -> None:
    long = "memory " * (MAX_TOKENS * 3)
    [a] = await embedder.embed([long])
    [b] = await embedder.embed(["memory " * (MAX_TOKENS + 50)])
    assert cos(a, b) > 0.999  # both cut at 256 word pieces


async def test_event_loop_keeps_serving_during_inference() -> None:
    embedder = BundledEmbedder(batch_size=8)
    embedder.embed_sync(["warm up"])
    texts = [f"sentence number {i} about the weather and the sea" * 3 for i in range(96)]
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    await embedder.embed(texts)
    total = time.perf_counter() - started
    done.set()
    await task
    assert len(gaps) > 5
    assert max(gaps) < max(0.2, total / 3), (max(gaps), total)


def test_a_query_runs_beside_a_bulk_batch_not_after_it() -> None:
    """In embedded mode the context assembler shares the embedder with the embedding service: a query (a few
    short texts) has its own lane and finishes while a bulk batch's run holds the model; another bulk batch
    waits for that run."""
    embedder = BundledEmbedder(batch_size=8)
    embedder.embed_sync(["warm up"])
    bulk_texts = [f"turn {i} of a long chat about the sea and the harbour" for i in range(SMALL_BATCH + 1)]
    pool = ThreadPoolExecutor(2)
    bulk_lane = embedder._bulk_lane
    bulk_lane.acquire()  # a bulk batch's run in progress
    try:
        query = pool.submit(embedder.embed_sync, ["where did we sail last summer?"])
        bulk = pool.submit(embedder.embed_sync, bulk_texts)
        assert len(query.result(timeout=30)[0]) == DIMENSIONS
        assert not bulk.done()
    finally:
        bulk_lane.release()
    assert len(bulk.result(timeout=30)) == len(bulk_texts)
    pool.shutdown()


@settings(max_examples=200, deadline=None)
@given(lengths=st.lists(st.integers(1, 256), max_size=300), batch_size=st.integers(1, 64))
def test_padded_batches_cover_every_text_once_within_the_padding_budget(lengths, batch_size):
    batches = padded_batches(lengths, batch_size)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    for b in batches:
        assert len(b) <= 4 * batch_size
        width = max(lengths[i] for i in b)
        # A batch may pass the budget only when it holds a single text wider than the budget allows.
        assert len(b) * width <= batch_size * TOKENS_PER_ROW or len(b) == 1


def test_padded_batches_keep_short_lines_together_and_long_texts_apart():
    lengths = [10] * 64 + [250] * 4
    batches = padded_batches(lengths, 32)
    assert any(len(b) == 64 for b in batches), "64 short lines fit one call (64 x 10 <= 32 x 64)"
    assert all(len(b) <= 8 for b in batches if max(lengths[i] for i in b) == 250)


@pytest.mark.parametrize(("spin_threads", "entry"), [(False, "0"), (True, "1")])
def test_spinning_threads_follow_the_settings(spin_threads: bool, entry: str) -> None:
    """Off by default: onnxruntime's threads would busy-wait between batches on cores the service needs."""
    embedder = build_embedder(Settings(embedder=EmbedderSettings(spin_threads=spin_threads))).inner
    assert isinstance(embedder, BundledEmbedder)
    _, session = embedder._load()
    assert session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") == entry
    assert EmbedderSettings().spin_threads is False
