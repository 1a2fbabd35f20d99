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
