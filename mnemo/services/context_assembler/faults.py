"""A fault switch on the assembler's vector index, for end-to-end tests of degraded service.

The embedded stack runs Qdrant Edge inside its own process (no Qdrant server binary is installable here, see
the infra guide), so a test cannot stop a server to take the index away mid-test. ``SwitchableIndex`` wraps the
index the assembler uses and, while ``path`` exists, behaves as a stopped Qdrant server would:

- file content ``down`` (or empty): every call fails at once with ``VectorIndexUnavailable``;
- ``hang``: every call waits forever (a server that accepts the connection and never answers), so only the
  assembler's own deadline ends it.

Removing the file brings the index back. Only the assembler's view is affected (the embedding service keeps
indexing). Wired only when ``MNEMO_CONTEXT_ASSEMBLER__FAULT_FILE`` is set; never in production.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from mnemo.shared.vectors.port import (
    ScoredPoint,
    SparseVector,
    VectorFilter,
    VectorIndex,
    VectorIndexUnavailable,
    VectorPoint,
)


class SwitchableIndex:
    def __init__(self, inner: VectorIndex, path: Path) -> None:
        self._inner = inner
        self._path = path

    async def _check(self) -> None:
        try:
            mode = self._path.read_text().strip()
        except FileNotFoundError:
            return
        if mode == "hang":
            await asyncio.Event().wait()
        raise VectorIndexUnavailable(f"vector index stopped by the fault switch {self._path}")

    async def ensure_collection(self, dimensions: int) -> None:
        await self._check()
        await self._inner.ensure_collection(dimensions)

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        await self._check()
        await self._inner.upsert(points)

    async def search(
        self, vector: Sequence[float], flt: VectorFilter, limit: int, score_threshold: float | None = None
    ) -> list[ScoredPoint]:
        await self._check()
        return await self._inner.search(vector, flt, limit, score_threshold)

    async def hybrid_search(
        self,
        vector: Sequence[float],
        sparse: SparseVector,
        flt: VectorFilter,
        limit: int,
        score_threshold: float | None = None,
    ) -> list[ScoredPoint]:
        await self._check()
        return await self._inner.hybrid_search(vector, sparse, flt, limit, score_threshold)

    async def delete(self, flt: VectorFilter) -> None:
        await self._check()
        await self._inner.delete(flt)

    async def delete_ids(self, ids: Sequence[str]) -> None:
        await self._check()
        await self._inner.delete_ids(ids)

    async def count(self, flt: VectorFilter | None = None) -> int:
        await self._check()
        return await self._inner.count(flt)

    async def retrieve(self, ids: Sequence[str]) -> list[ScoredPoint]:
        await self._check()
        return await self._inner.retrieve(ids)

    async def close(self) -> None:
        """The wrapped index belongs to the process, not to this view of it."""
