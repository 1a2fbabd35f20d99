"""Bulk loading for ``make bench-context``: many conversations straight into the read models and the index.

Embedding 100,000 texts with the bundled model takes about ten minutes on two cores, so only a realistic share
goes through the pipeline; the rest is written here with the services' own code, minus the model call:

- the ``message.recorded`` envelopes of each synthetic conversation (``bench.context_data.bulk_envelopes``) are
  folded into the messages and conversation read models by ``ReadModels.apply`` (text encrypted as live);
- the points are planned by the embedding service's ``plan_batch`` (same ids, payloads, audience, chunking);
- each point's dense vector is the pool embedding of its text, perturbed (``perturb``); its sparse vector is
  ``mnemo.shared.sparse.document_vector`` of the text itself, as the embedding service computes it.

Not written: the event log (the assembler never reads it; appending would make the relay publish every event
and the embedding service embed them all). So these conversations exist for queries, not for ``mnemo replay``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt

from bench.context_data import bulk_envelopes, perturb
from mnemo.services.embedding.app import chunk_strings
from mnemo.services.embedding.domain import plan_batch
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.sparse import document_vector
from mnemo.shared.vectors.port import VectorIndex, VectorPoint


@dataclass(frozen=True)
class BulkLayout:
    """Who the bulk conversations belong to: users round-robin, each conversation with one of ``bot_ids``."""

    tenant_id: str
    user_ids: Sequence[str]
    bot_ids: Sequence[str]
    conversation_size: int = 500
    sigma: float = 0.01


def single_chunk(texts: Sequence[str]) -> list[str]:
    """The distinct texts the chunker keeps whole (one point each), so points == messages when loading."""
    return [t for t in dict.fromkeys(texts) if t.strip() and len(chunk_strings(t)) == 1]


async def bulk_load(
    models: ReadModels,
    index: VectorIndex,
    model_id: str,
    layout: BulkLayout,
    pool_texts: Sequence[str],
    pool_vectors: npt.NDArray[np.float32],
    points: int,
    seed: int = 7,
) -> int:
    """Write conversations until ``points`` points are indexed; returns the number of conversations written."""
    rng = random.Random(seed)
    noise = np.random.default_rng(seed)
    written = conversations = 0
    start = time.perf_counter()
    next_report = 10_000
    base = datetime(2022, 1, 1, tzinfo=UTC)
    while written < points:
        n = min(layout.conversation_size, points - written)
        user = layout.user_ids[conversations % len(layout.user_ids)]
        bot = layout.bot_ids[conversations % len(layout.bot_ids)]
        picks = [rng.randrange(len(pool_texts)) for _ in range(n)]
        envelopes = bulk_envelopes(
            layout.tenant_id,
            user,
            f"bulk-{conversations}",
            bot,
            f"persona-{user}",
            [pool_texts[i] for i in picks],
            base + timedelta(days=conversations),
        )
        await models.apply(envelopes)
        plan = plan_batch(envelopes, {}, model=model_id, chunker=chunk_strings)
        pick_of = {f"b{i}": p for i, p in enumerate(picks)}
        await index.upsert(
            [
                VectorPoint(
                    p.id,
                    perturb(pool_vectors[pick_of[str(p.payload["message_id"])]], noise, layout.sigma).tolist(),
                    p.payload,
                    document_vector(p.text),
                )
                for p in plan.points
            ]
        )
        written += len(plan.points)
        conversations += 1
        if written >= next_report or written >= points:
            elapsed = time.perf_counter() - start
            print(
                f"  bulk-loaded {written:,}/{points:,} points in {conversations} conversations"
                f" ({elapsed:.0f}s, {written / max(elapsed, 1e-9):,.0f} points/s)",
                flush=True,
            )
            next_report += 10_000
    return conversations
