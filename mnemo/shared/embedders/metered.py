"""An embedder that counts what it embeds: texts (``mnemo_embedding_texts_total``) and the model's time per
call (``mnemo_embedding_model_duration_seconds``), by provider. ``build_embedder`` wraps every embedder in it,
so the embedding service and the context-assembler's query embeddings are counted alike."""

from __future__ import annotations

import time
from collections.abc import Sequence

from mnemo.shared.embedders.port import Embedder, WrappedEmbedder
from mnemo.shared.metrics import EMBEDDED_TEXTS, EMBEDDING_SECONDS


class MeteredEmbedder(WrappedEmbedder):
    def __init__(self, inner: Embedder, provider: str) -> None:
        super().__init__(inner)
        self._texts = EMBEDDED_TEXTS.labels(provider=provider)
        self._seconds = EMBEDDING_SECONDS.labels(provider=provider)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        started = time.perf_counter()
        vectors = await self.inner.embed(texts)
        self._seconds.observe(time.perf_counter() - started)
        self._texts.inc(len(texts))
        return vectors
