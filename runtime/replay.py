"""`mnemo replay`: rebuild every projection (read models and the vector index) from the event log.

The log is the source of truth; this drops the read models (lorebooks and their attachments, legacy lore,
characters' knowledge and lore timed effects and uploaded documents' chunks included) and the vectors of messages, summaries, legacy memories,
lore entries and characters' facts, then folds every event back in, in batches, printing progress. Run it with the stack stopped: in embedded mode the vector index has one owner
process, and live consumers would race the rebuild.

In stream mode (``MNEMO_VECTORS__MODE=stream``) the vectors are rebuilt in the points stream: replay writes the
reset marker and purges everything older (``StreamPointWriter.reset``), then publishes what the log projects,
re-embedding it as the embedding service would. Stop the embedding service (a live writer would race it);
context-assembler replicas may keep running: each wipes its shard when its follower reaches the marker and
applies the rebuild as it is published (until then they answer from the old shard).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from runtime.stack import start_servers
from services.context_assembler.timed_readmodel import LoreTimedReadModel
from services.embedding.app import chunk_strings
from services.embedding.domain import PAYLOAD_MODELS, payload_error
from services.embedding.handlers import EmbeddingHandler
from services.memory_extractor.witnessed import WitnessedReadModel
from shared.bootstrap import open_core
from shared.events.envelope import EventEnvelope
from shared.readmodels import ReadModels
from shared.readmodels.documents import DocumentsReadModel
from shared.readmodels.knowledge import KnowledgeReadModel
from shared.readmodels.legacy_lore import LegacyLoreReadModel
from shared.readmodels.lore import LoreReadModel
from shared.readmodels.summaries import SummariesReadModel
from shared.settings import Settings
from shared.vectors import points
from shared.vectors.stream import StreamPointWriter

log = logging.getLogger("mnemo.replay")

BATCH = 500


def embeddable(events: Sequence[EventEnvelope]) -> list[EventEnvelope]:
    """The events the embedding service handles; invalid payloads are logged and skipped, as live."""
    out = []
    for env in events:
        if env.type not in PAYLOAD_MODELS:
            continue
        if (reason := payload_error(env)) is not None:
            log.warning("skipping %s %s: %s", env.type, env.event_id, reason)
            continue
        out.append(env)
    return out


async def replay(settings: Settings, *, embedded: bool) -> int:
    """Returns the number of events replayed."""
    servers = await asyncio.to_thread(start_servers, settings) if embedded else []
    try:
        core = await open_core(settings, vectors="write", embedder=True)
        try:
            read_models = ReadModels(core.db, core.cipher)
            summaries = SummariesReadModel(core.db, core.cipher)
            witnessed = WitnessedReadModel(core.db)
            lore = LoreReadModel(core.db, core.cipher)
            legacy = LegacyLoreReadModel(core.db, core.cipher)
            knowledge = KnowledgeReadModel(core.db, core.cipher)
            documents = DocumentsReadModel(core.db, core.cipher)
            vectors = core.vectors
            if vectors is None or core.embedder is None:
                raise RuntimeError("replay needs the vector index and the embedder")
            # The knowledge read model is folded before the embedding in each batch, so facts are indexed from it.
            embedding = EmbeddingHandler(
                vectors, core.embedder, read_models, chunk_strings, lore=lore, knowledge=knowledge, documents=documents
            )
            projections = (
                read_models,
                summaries,
                witnessed,
                lore,
                legacy,
                knowledge,
                LoreTimedReadModel(core.db),
                documents,
            )
            for projection in projections:
                await projection.drop_all()
            if isinstance(vectors, StreamPointWriter):
                await vectors.reset()  # followers wipe their shard at the marker
            else:
                await vectors.delete(points.all_kinds())
            return await _fold_log(core.store.read_all(batch_size=BATCH), projections, embedding)
        finally:
            await core.close()
    finally:
        for server in reversed(servers):
            await asyncio.to_thread(server.stop)


class Projection(Protocol):
    async def drop_all(self) -> None: ...

    async def apply(self, events: Sequence[EventEnvelope], /) -> object: ...


async def _fold_log(
    events: AsyncIterator[EventEnvelope], projections: Sequence[Projection], embedding: EmbeddingHandler
) -> int:
    started = time.monotonic()
    total = 0
    batch: list[EventEnvelope] = []

    async def flush() -> None:
        nonlocal total
        for projection in projections:  # in this order: later ones may read earlier ones (lore, messages)
            await projection.apply(batch)
        await embedding.project(embeddable(batch))
        total += len(batch)
        batch.clear()
        print(f"replayed {total} events ({total / max(time.monotonic() - started, 1e-9):,.0f}/s)", flush=True)

    async for env in events:
        batch.append(env)
        if len(batch) >= BATCH:
            await flush()
    if batch:
        await flush()
    print(f"replay done: {total} events in {time.monotonic() - started:.1f}s", flush=True)
    return total
