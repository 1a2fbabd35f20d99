"""``make bench-context ARGS="--bulk-beside"``: the measured requests while the stack's embedder embeds batches of
chat turns back to back, as the embedding service does under a backlog in embedded mode (``make run``: one
process, one embedder for every service).

The batches are the embedding service's shape (``--bulk-size`` texts, 32 by default, its batch size), taken in
turn from the benchmark's pool of REALTALK turns, and they go through the same ``embed`` call on the same event
loop, so a context request's query meets them as it would meet the service's. A task rather than published
messages: the backlog then lasts exactly as long as the measured requests, whatever the pipeline's pace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import TracebackType

from mnemo.shared.embedders.port import Embedder


class BulkEmbedding:
    """Batches of ``size`` of ``texts`` (cycled) embedded back to back on ``embedder`` while the block runs;
    ``batches`` counts those finished."""

    def __init__(self, embedder: Embedder, texts: Sequence[str], size: int = 32) -> None:
        if not texts or size < 1:
            raise ValueError("bulk embedding needs texts and a batch size of at least 1")
        self._embedder = embedder
        self._texts = list(texts)
        self._size = size
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.batches = 0

    async def __aenter__(self) -> BulkEmbedding:
        self._task = asyncio.create_task(self._run(), name="bench bulk embedding")
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task  # the batch in flight finishes: the model is never left mid-run

    async def _run(self) -> None:
        start = 0
        while not self._stop.is_set():
            batch = [self._texts[(start + k) % len(self._texts)] for k in range(self._size)]
            start = (start + self._size) % len(self._texts)
            await self._embedder.embed(batch)
            self.batches += 1
