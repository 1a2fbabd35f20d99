"""The embedder port: texts in, L2-normalised dense vectors out (cosine = dot product)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class EmbedderUnavailable(Exception):
    """The provider cannot embed right now (network, rate limit after retries, model missing)."""


class Embedder(Protocol):
    @property
    def dimensions(self) -> int: ...

    @property
    def model_id(self) -> str:
        """Recorded beside every vector so a model change can be detected and re-embedded."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, same order. Implementations batch internally and never block the loop."""
        ...

    async def close(self) -> None: ...


class WrappedEmbedder:
    """An embedder in front of another one (counting, memoizing): the model, its dimensions and closing are the
    inner one's; a subclass changes how ``embed`` reaches it."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return await self.inner.embed(texts)

    async def close(self) -> None:
        await self.inner.close()
