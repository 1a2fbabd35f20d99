"""The memory API's write path without servers, for the memory search and context tests: the memory service
(in-memory log and read model) remembers, the embedding service indexes what it published into Qdrant Edge (the
real engine, in process) with the bundled model, and the context-assembler searches and assembles."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mnemo.services.context_assembler.app import create_router as create_assembler
from mnemo.services.context_assembler.settings import AssemblerSettings
from mnemo.services.memory.app import create_router as create_memory
from mnemo.shared import subjects
from tests.components import Reads, Rpc, deps, edge_index, published, served
from tests.released.context_v1 import parses_as_released

T = "t1"


@dataclass
class World:
    rpc: Rpc
    index_events: Any

    async def remember(self, user: str, content: str, *, engine: bool = False, **fields: Any) -> str:
        body = {"tenant_id": T, "user_id": user, "owner_namespace": f"player:{user}", "type": "episodic",
                "content": content, **fields}  # fmt: skip
        reply = await self.rpc(subjects.MEMORY_ENGINE_REMEMBER if engine else subjects.MEMORY_REMEMBER, body)
        assert "memory_id" in reply, reply
        await self.index_events()
        return str(reply["memory_id"])

    async def search(self, user: str, query: str, **fields: Any) -> dict[str, Any]:
        return await self.rpc(subjects.MEMORY_SEARCH, {"tenant_id": T, "user_id": user, "query": query, **fields})

    async def context(self, user: str, message: str, *, bot: str = "bard", **fields: Any) -> dict[str, Any]:
        """A context for ``user`` talking to ``bot`` (in conversation c1 unless ``fields`` say otherwise)."""
        body = {"tenant_id": T, "user_id": user, "conversation_id": "c1", "bot_id": bot, "user_message": message,
                **fields}  # fmt: skip
        reply = await self.rpc(subjects.CONTEXT_ASSEMBLE, body)
        assert "sources" in reply, reply
        parses_as_released(reply)  # a client released before the memory API reads every reply
        return reply

    async def found(self, user: str, query: str, **fields: Any) -> list[str]:
        reply = await self.search(user, query, **fields)
        assert "results" in reply, reply
        return [hit["id"] for hit in reply["results"]]


@pytest.fixture
async def world(tmp_path: Path, embedder: Any) -> AsyncIterator[World]:
    reads = Reads()
    d = deps(read_models=reads.ports)
    async with edge_index(tmp_path / "edge", embedder) as index:
        d.vectors, d.embedder = index, embedder
        embedding = reads.embedding_handler(index, embedder)
        memory = create_memory(d)
        settings = AssemblerSettings(retrieval_timeout_s=60, read_timeout_s=30, deadline_s=60, min_score=-1.0)

        async def index_events() -> None:
            await embedding.project(published(d).take())

        async with served(memory, create_assembler(d, settings, reads.assembler_reads())) as rpc:
            yield World(rpc, index_events)
