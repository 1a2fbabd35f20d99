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
from pathlib import Path

from mnemo.shared.vectors.guarded import GuardedIndex
from mnemo.shared.vectors.port import VectorIndex, VectorIndexUnavailable


class SwitchableIndex(GuardedIndex):
    def __init__(self, inner: VectorIndex, path: Path) -> None:
        super().__init__(inner)
        self._path = path

    async def _check(self) -> None:
        try:
            mode = self._path.read_text().strip()
        except FileNotFoundError:
            return
        if mode == "hang":
            await asyncio.Event().wait()
        raise VectorIndexUnavailable(f"vector index stopped by the fault switch {self._path}")

    async def before_write(self) -> None:
        await self._check()

    async def before_read(self) -> None:
        await self._check()

    async def close(self) -> None:
        """The wrapped index belongs to the process, not to this view of it."""
