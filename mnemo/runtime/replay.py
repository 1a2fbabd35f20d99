"""`mnemo replay`: rebuild every projection (read models and the vector index) from the event log.

The log is the source of truth; this drops every read model of the projection catalog
(``mnemo/shared/readmodels/catalog.py``) and the vectors of messages, summaries, legacy memories, lore entries,
characters' facts, documents and the memory API's memories, then folds every event back in, in batches (each read model gets the types it
folds), with a progress bar and the totals by event type at the end; events of erased users are skipped (their keys are gone, and ``Erasures`` hides
their plaintext events too). Run it with the stack stopped: in embedded mode the vector index has one owner
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
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from mnemo.runtime.stack import start_servers
from mnemo.services.embedding.app import chunk_strings
from mnemo.services.embedding.handlers import EmbeddingHandler
from mnemo.shared.bootstrap import open_core
from mnemo.shared.eventlog.erasures import Erasures
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import ERASURE_COMPLETED, REGISTRY
from mnemo.shared.readmodels.catalog import (
    CATALOG,
    CONVERSATIONS,
    DOCUMENTS,
    KNOWLEDGE,
    LORE,
    MEMORIES,
    MongoReadModelPorts,
    drop,
)
from mnemo.shared.settings import Settings
from mnemo.shared.vectors import points
from mnemo.shared.vectors.stream import StreamPointWriter

log = logging.getLogger("mnemo.replay")

BATCH = 500


async def replay(settings: Settings, *, embedded: bool, nats_config: str = "") -> int:
    """Returns the number of events replayed; ``nats_config``: the embedded nats-server's (``--secure``)."""
    servers = await asyncio.to_thread(start_servers, settings, nats_config) if embedded else []
    try:
        return await rebuild(settings)
    finally:
        for server in reversed(servers):
            await asyncio.to_thread(server.stop)


async def rebuild(settings: Settings) -> int:
    """Drop and refold every projection on running servers; returns the number of events replayed."""
    core = await open_core(settings, vectors="write", embedder=True)
    try:
        ports = MongoReadModelPorts(core.db, core.cipher)
        vectors = core.vectors
        if vectors is None or core.embedder is None:
            raise RuntimeError("replay needs the vector index and the embedder")
        # The knowledge read model is folded before the embedding in each batch, so facts are indexed from it.
        embedding = EmbeddingHandler(
            vectors,
            core.embedder,
            ports.of(CONVERSATIONS),
            chunk_strings,
            lore=ports.of(LORE),
            knowledge=ports.of(KNOWLEDGE),
            documents=ports.of(DOCUMENTS),
            memories=ports.of(MEMORIES),
        )
        for model in CATALOG:
            await drop(core.db, model)
        if isinstance(vectors, StreamPointWriter):
            await vectors.reset()  # followers wipe their shard at the marker
        else:
            await vectors.delete(points.all_kinds())
        # Everything of an erased user stays erased (mnemo/shared/eventlog/erasures.py, docs/privacy.md).
        erasure_docs = await core.store.events.find({"type": ERASURE_COMPLETED.name}).to_list()
        erasures = Erasures.of(REGISTRY, await core.codec.decode_all(erasure_docs))
        expected = await core.store.events.estimated_document_count()
        projections = [Projection(model.folds, ports.of(model)) for model in CATALOG]
        return await _fold_log(core.store.read_all(batch_size=BATCH), projections, embedding, erasures, expected)
    finally:
        await core.close()


class Folding(Protocol):
    async def apply(self, events: Sequence[EventEnvelope], /) -> object: ...


@dataclass(frozen=True)
class Projection:
    """A read model being rebuilt: the event types it folds, and its adapter."""

    folds: frozenset[str]
    port: Folding


async def _fold_log(
    events: AsyncIterator[EventEnvelope],
    projections: Sequence[Projection],
    embedding: EmbeddingHandler,
    erasures: Erasures,
    expected: int | None = None,
) -> int:
    """Fold every event, showing a progress bar against ``expected`` (the log's size when replay started), then
    the totals by event type."""
    started = time.monotonic()
    total = hidden = 0
    by_type: Counter[str] = Counter()
    batch: list[EventEnvelope] = []
    console = Console()
    progress = Progress(
        TextColumn("replaying"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("events"),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )
    task = progress.add_task("replay", total=expected)

    async def flush() -> None:
        nonlocal total
        for projection in projections:  # in this order: later ones may read earlier ones (lore, messages)
            if folded := [e for e in batch if e.type in projection.folds]:
                await projection.port.apply(folded)
        await embedding.project(batch)  # the types it handles; an invalid payload is logged and skipped
        total += len(batch)
        by_type.update(e.type for e in batch)
        progress.update(task, completed=total, total=max(total, expected or 0) or None)
        batch.clear()

    with progress:
        async for env in events:
            if erasures.hides(env):
                hidden += 1
                continue
            batch.append(env)
            if len(batch) >= BATCH:
                await flush()
        if batch:
            await flush()
    elapsed = time.monotonic() - started
    table = Table("event type", "events", title="replayed")
    for event_type, count in sorted(by_type.items()):
        table.add_row(event_type, f"{count:,}")
    table.add_row("[bold]total[/bold]", f"[bold]{total:,}[/bold]")
    console.print(table)
    erased = f" ({hidden} of erased users skipped)" if hidden else ""
    print(f"replay done: {total} events in {elapsed:.1f}s ({total / max(elapsed, 1e-9):,.0f}/s){erased}", flush=True)
    return total
