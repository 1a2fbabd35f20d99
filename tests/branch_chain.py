"""Ingest -> memory-extractor -> context-assembler on in-memory fakes, for the swipe and fork property tests.

Chat commands are decoded by subject as ingest's consumer does; what ingest and the extractor publish is
handed on to the extractor, as the relay would, until quiet; the context is asked over ``TestNatsBroker``. No
vector index or embedder: the history and the knowledge sections (read models only) are what these tests read.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mnemo.services.context_assembler.app import create_router as create_assembler
from mnemo.services.context_assembler.settings import AssemblerSettings
from mnemo.services.ingest.handlers import IngestHandler, decode_command
from mnemo.services.ingest.recorder import Recorder
from mnemo.services.memory_extractor.handlers import MemoryExtractor
from mnemo.services.memory_extractor.learning import Learning
from mnemo.services.memory_extractor.revisions import Revisions
from mnemo.shared import subjects
from mnemo.shared.readmodels.inmemory.witnessed import InMemoryWitnessed
from tests.components import Reads, Rpc, deps, items, published, served


class Chain:
    def __init__(self) -> None:
        self.reads = Reads()
        self.deps = deps(read_models=self.reads.ports)
        self.ingest = IngestHandler(Recorder(self.deps.store, self.reads.models, self.deps.saver))
        learning = Learning(self.deps.store, self.deps.saver, self.reads.knowledge, family=self.reads.models.family)
        revisions = Revisions(self.deps.store, self.reads.knowledge, learning)
        self.extractor = MemoryExtractor(self.deps.saver, InMemoryWitnessed(), learning, revisions)
        self.rpc: Rpc | None = None

    async def send(self, *wire: tuple[str, dict[str, Any]]) -> list[str]:
        """One ingest batch, then everything it caused; the refusal reasons."""
        commands = [decode_command(subject, json.dumps(body, default=str).encode()) for subject, body in wire]
        refused = [r.reason for r in await self.ingest.on_chat_batch(items(commands))]
        while events := published(self.deps).take():
            assert await self.extractor.on_batch(items(events)) == []
        return refused

    async def replayed(self) -> Reads:
        """Fresh read models folded from the whole log, as ``mnemo replay`` rebuilds them."""
        fresh = Reads()
        events = [e async for e in self.deps.store.read_all()]
        await fresh.models.apply(events)
        await fresh.knowledge.apply(events)
        return fresh

    async def context(self, tenant: str, user: str, conversation: str, bot: str) -> dict[str, str]:
        """The context's sections by name (``history``, ``knowledge``, ...)."""
        assert self.rpc is not None
        body = {"tenant_id": tenant, "user_id": user, "conversation_id": conversation, "bot_id": bot,
                "user_message": "", "max_tokens": 100_000}  # fmt: skip
        reply = await self.rpc(subjects.CONTEXT_ASSEMBLE, body)
        assert "error" not in reply, reply
        return {s["name"]: s["text"] for s in reply["sections"]}


@asynccontextmanager
async def branch_chain() -> AsyncIterator[Chain]:
    chain = Chain()
    settings = AssemblerSettings(history_limit=200, knowledge_limit=100, read_timeout_s=30, deadline_s=60)
    async with served(create_assembler(chain.deps, settings, chain.reads.assembler_reads())) as rpc:
        chain.rpc = rpc
        yield chain
