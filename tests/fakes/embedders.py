"""Embedders for tests where the vectors do not matter: every text gets the same unit vector."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence


class ConstantEmbedder:
    """Embeds every text as ``[1, 0, 0, ...]`` of ``dimensions`` (the ``Embedder`` port, no model behind it)."""

    def __init__(self, dimensions: int = 2, model_id: str = "fake") -> None:
        self.dimensions = dimensions
        self.model_id = model_id

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0] + [0.0] * (self.dimensions - 1) for _ in texts]

    async def close(self) -> None:
        return None


class RecordingEmbedder(ConstantEmbedder):
    """:class:`ConstantEmbedder` that records each call's texts and yields to the event loop once per call, as a
    real embedder does while its model runs (a caller embedding in a loop then lets other tasks run)."""

    def __init__(self, dimensions: int = 2, model_id: str = "fake") -> None:
        super().__init__(dimensions, model_id)
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        await asyncio.sleep(0)
        return await super().embed(texts)
