"""An embedder that counts what it embeds: texts (``mnemo_embedding_texts_total``) and the model's time per
call (``mnemo_embedding_model_duration_seconds``), by provider. ``build_embedder`` wraps every embedder in it,
so the embedding service and the context-assembler's query embeddings are counted alike."""

from __future__ import annotations

import time
from collections.abc import Sequence

from mnemo.shared.embedders.port import Embedder
from mnemo.shared.metrics import EMBEDDED_TEXTS, EMBEDDING_SECONDS


class MeteredEmbedder:
    def __init__(self, inner: Embedder, provider: str) -> None:
        self.inner = inner
        self._texts = EMBEDDED_TEXTS.labels(provider=provider)
        self._seconds = EMBEDDING_SECONDS.labels(provider=provider)

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        started = time.perf_counter()
        vectors = await self.inner.embed(texts)
        self._seconds.observe(time.perf_counter() - started)
        self._texts.inc(len(texts))
        return vectors

    async def close(self) -> None:
        await self.inner.close()
