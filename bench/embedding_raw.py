"""The raw-model reference for the embedding benchmark: texts per second of ``BundledEmbedder.embed_sync``.

The service path (``embed`` through a worker thread, then the broker) is compared against this number, so
it measures the model alone: one embedder, warmed up, on the calling thread, no event loop.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from mnemo.shared.embedders.bundled import BundledEmbedder


def measure_raw_model(
    texts: Sequence[str], batch_size: int, *, threads: int | None = None, spin: bool = False
) -> float:
    """Texts/s of ``embed_sync`` over ``texts`` at ``batch_size`` (session load and a warm-up excluded)."""
    if not texts:
        raise ValueError("need at least one text")
    embedder = BundledEmbedder(batch_size=batch_size, threads=threads, spin=spin)
    embedder.embed_sync(list(texts[:batch_size]))  # load the session and warm the kernels
    started = time.perf_counter()
    embedder.embed_sync(texts)
    return len(texts) / (time.perf_counter() - started)


def measure_raw_model_windowed(texts: Sequence[str], batch_size: int, window: int, *, spin: bool = False) -> float:
    """Texts/s of ``embed_sync`` called on consecutive windows of ``window`` texts, as a streaming consumer
    sees them (it can only sort one fetched window by length, not the whole stream)."""
    embedder = BundledEmbedder(batch_size=batch_size, spin=spin)
    embedder.embed_sync(list(texts[:batch_size]))
    started = time.perf_counter()
    for start in range(0, len(texts), window):
        embedder.embed_sync(texts[start : start + window])
    return len(texts) / (time.perf_counter() - started)


if __name__ == "__main__":
    sample = [f"Message {i}: we talked about the trip to the coast and what to pack for it." for i in range(512)]
    for size in (1, 8, 32, 64):
        print(f"batch {size:>3}: {measure_raw_model(sample, size):8.1f} texts/s")
