"""`make bench-memory-search`: latency of ``mnemo.rpc.memory.search.v1`` over 100,000 remembered memories of one
tenant among 300,000, beside a bare hybrid query of the same index measured in the same run.

What it does, and why each choice:

- A fresh embedded stack in a temporary directory (nats-server, SecantusDB, Qdrant Edge, the bundled model,
  every service in this process: ``mnemo/runtime/stack.all_services``), as ``make run`` runs it; requests go
  over NATS to the context assembler, which serves the memory search.
- ``--memories`` (100,000) memories of the measured tenant, spread over 10 players (``player:<user>``), 4
  campaigns and 4 characters (a quarter of them for one character only), and ``--others`` (200,000) memories
  of 4 other tenants. Embedding 300,000 texts with the bundled model would take about half an hour on two
  cores, so they are written directly, with the services' own code minus the model call: the measured
  tenant's rows through the memories read model's ``apply`` of real ``memory.remembered`` envelopes (encrypted
  as live); every point planned by the embedding service's ``memory_points`` (same ids and payload as the
  memory API's writes, so the search's filters are the real ones). Texts are distinct synthetic sentences
  (a serial number and words drawn from a 2,000-word list); each dense vector is the real embedding of one of
  ``--pool`` (512) of those sentences, perturbed (Gaussian, cosine ~0.98); each sparse vector is the real
  ``document_vector`` of the point's own text. The other tenants' rows are not written to the read model
  (the search never reads another tenant's rows; their points are in the index, where the filter must skip
  them).
- Requests: ``--requests`` (300) searches by one player of the measured tenant, over their own namespace and
  one campaign, ``limit`` 10, queries of 3 to 6 words from the same list, sent one at a time after
  ``--warmup`` (20) unmeasured ones; every reply checked (no error, not degraded).
- Reference, same run, same index, same queries: one query embedding plus one hybrid (dense + lexical) query
  with the memory filter the search uses for that player (``points.visible_memories``), ``limit`` = the
  search's candidate pool; p50 and p95 of each. Goal: the search's p95 within 3x of the reference's p95.

Ends with one JSON line. Quick run: ``make bench-memory-search ARGS="--memories 5000 --others 10000"``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import nats
import numpy as np

from bench.common import embedded_backends, machine, percentile, print_result
from bench.context_data import perturb
from mnemo.runtime.stack import all_services
from mnemo.services.context_assembler.recall.search import POOL_EXTRA, POOL_FACTOR
from mnemo.services.context_assembler.settings import AssemblerSettings
from mnemo.services.embedding.app import chunk_strings
from mnemo.services.embedding.memories import memory_points
from mnemo.shared import subjects
from mnemo.shared.bootstrap import Core
from mnemo.shared.events.envelope import EventEnvelope, deterministic_id
from mnemo.shared.events.recorded import MEMORY_REMEMBERED
from mnemo.shared.events.recorded.memories import MemoryRemembered, memory_stream
from mnemo.shared.mapping import mapped
from mnemo.shared.readmodels.memories import MemoriesReadModel, MemoryView
from mnemo.shared.sparse import document_vector, query_vector
from mnemo.shared.vectors import points
from mnemo.shared.vectors.port import VectorPoint, VectorQuery

GOAL_RATIO = 3.0
TENANT = "bench-memory"
OTHER_TENANTS = tuple(f"bench-other-{i}" for i in range(4))
USERS = tuple(f"player-{i}" for i in range(10))
CAMPAIGNS = tuple(f"campaign-{i}" for i in range(4))
BOTS = tuple(f"bot-{i}" for i in range(4))
TYPES = ("episodic", "semantic", "declarative", "procedural")
BATCH = 1000
LIMIT = 10


def vocabulary(rng: random.Random, size: int = 2000) -> list[str]:
    """Distinct pronounceable words: letters drawn at random, so texts share words but never repeat."""
    consonants, vowels = "bcdfghklmnprstvz", "aeiou"
    words: set[str] = set()
    while len(words) < size:
        n = rng.randint(2, 4)
        words.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(n)))
    return sorted(words)


def sentence(i: int, words: list[str], rng: random.Random) -> str:
    return f"Memory {i}: " + " ".join(rng.choice(words) for _ in range(rng.randint(8, 16))) + "."


def view_of(tenant: str, i: int, text: str, rng: random.Random) -> MemoryView:
    user = USERS[i % len(USERS)]
    kind = i % 3
    namespace = f"player:{user}" if kind == 0 else f"campaign:{CAMPAIGNS[i % len(CAMPAIGNS)]}"
    if kind == 2:
        namespace = f"character:{BOTS[i % len(BOTS)]}"
    bot = BOTS[i % len(BOTS)] if i % 4 == 0 or kind == 2 else None
    return MemoryView(
        memory_id=f"m-{tenant}-{i}",
        tenant_id=tenant,
        user_id=user,
        by_user_id=user,
        owner_namespace=namespace,
        memory_type=TYPES[i % len(TYPES)],
        title=f"Note {i}",
        content=text,
        tags=(f"npc:{rng.choice(BOTS)}",),
        assets=(),
        metadata={},
        bot_id=bot,
        conversation_id=None,
        occurred_at=datetime(2025, 1, 1, tzinfo=UTC) + timedelta(minutes=i),
        version=1,
    )


def envelope(view: MemoryView) -> EventEnvelope:
    stream = memory_stream(view.tenant_id, view.memory_id)
    payload = mapped(MemoryRemembered, view, remembered_at=view.occurred_at)
    return EventEnvelope(
        event_id=deterministic_id("bench-memory-search", stream),
        type=MEMORY_REMEMBERED.name,
        schema_version=MEMORY_REMEMBERED.schema_version,
        stream_id=stream,
        version=1,
        tenant_id=view.tenant_id,
        occurred_at=view.occurred_at,
        recorded_at=view.occurred_at,
        payload=payload.model_dump(mode="json"),
    )


async def load(core: Core, args: argparse.Namespace, words: list[str], rng: random.Random) -> dict[str, float]:
    """Every tenant's memories into the index (and the measured tenant's into the read model)."""
    assert core.vectors is not None
    assert core.embedder is not None
    assert core.db is not None
    index, embedder = core.vectors, core.embedder
    rows = MemoriesReadModel(core.db, core.cipher)
    pool_texts = [sentence(-1 - i, words, rng) for i in range(args.pool)]
    started = time.perf_counter()
    pool = np.asarray(await embedder.embed(pool_texts), dtype=np.float32)
    embed_s = time.perf_counter() - started
    noise = np.random.default_rng(args.seed)
    plan = [(TENANT, args.memories)] + [(t, args.others // len(OTHER_TENANTS)) for t in OTHER_TENANTS]
    total, started = sum(n for _, n in plan), time.perf_counter()
    written = 0
    for tenant, count in plan:
        for first in range(0, count, BATCH):
            views = [view_of(tenant, i, sentence(i, words, rng), rng) for i in range(first, min(count, first + BATCH))]
            if tenant == TENANT:
                await rows.apply([envelope(v) for v in views])
            batch = []
            for v in views:
                for p in memory_points(v, embedder.model_id, chunk_strings):
                    vector = perturb(pool[rng.randrange(len(pool))], noise, args.sigma)
                    batch.append(VectorPoint(p.id, vector.tolist(), p.payload, document_vector(p.text)))
            await index.upsert(batch)
            written += len(views)
            if written % 20_000 < BATCH or written == total:
                elapsed = time.perf_counter() - started
                print(f"  loaded {written:,}/{total:,} memories ({elapsed:.0f}s)", flush=True)
    return {"pool_embed_s": round(embed_s, 1), "load_s": round(time.perf_counter() - started, 1)}


def queries(words: list[str], rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.choice(words) for _ in range(rng.randint(3, 6))) for _ in range(n)]


async def search_latencies(nc: Any, bodies: list[bytes], warmup: int) -> tuple[list[float], int, int]:
    """Milliseconds per search (after ``warmup``), the number of degraded replies and of results."""
    out: list[float] = []
    degraded = found = 0
    for i, body in enumerate(bodies):
        start = time.perf_counter()
        msg = await nc.request(subjects.MEMORY_SEARCH, body, timeout=60)
        elapsed = (time.perf_counter() - start) * 1000
        reply = json.loads(msg.data)
        if "error" in reply:
            raise RuntimeError(f"memory.search failed: {reply}")
        if i >= warmup:
            out.append(elapsed)
            degraded += bool(reply.get("degraded"))
            found += len(reply["results"])
    return out, degraded, found


async def bare_hybrid(core: Core, texts: list[str], namespaces: list[str]) -> tuple[list[float], list[float]]:
    """Per query: one embedding + one hybrid query with the player's memory filter (ms), and the query alone."""
    assert core.vectors is not None
    assert core.embedder is not None
    settings = AssemblerSettings()
    flt = points.visible_memories(TENANT, namespaces, None)
    pool = LIMIT * POOL_FACTOR + POOL_EXTRA
    whole, query_only = [], []
    for text in texts:
        start = time.perf_counter()
        [vector] = await core.embedder.embed([text])
        mid = time.perf_counter()
        await core.vectors.hybrid_search(VectorQuery(vector, query_vector(text), flt, pool, settings.min_score))
        end = time.perf_counter()
        whole.append((end - start) * 1000)
        query_only.append((end - mid) * 1000)
    return whole, query_only


async def main(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    words = vocabulary(rng)
    user = USERS[0]
    namespaces = [f"player:{user}", f"campaign:{CAMPAIGNS[0]}"]
    texts = queries(words, rng, args.requests + args.warmup)
    print(f"{args.memories:,} memories of the measured tenant, {args.others:,} of 4 others", flush=True)
    async with contextlib.AsyncExitStack() as stack:
        settings = await stack.enter_async_context(embedded_backends())
        core = await stack.enter_async_context(all_services(settings))
        timings = await load(core, args, words, rng)
        nc = await nats.connect(settings.nats_url)
        try:
            request = {"tenant_id": TENANT, "user_id": user, "namespaces": namespaces, "limit": LIMIT}
            bodies = [json.dumps(request | {"query": t}).encode() for t in texts]
            print(f"measuring {args.requests} memory searches, one at a time ...", flush=True)
            load_before = os.getloadavg()
            latencies, degraded, found = await search_latencies(nc, bodies, args.warmup)
            print("reference in the same run: one query embedding + one bare hybrid query ...", flush=True)
            whole, query_only = await bare_hybrid(core, texts[args.warmup :], namespaces)
            load_after = os.getloadavg()
        finally:
            await nc.drain()
    p95, ref_p95 = percentile(latencies, 95), percentile(whole, 95)
    result: dict[str, Any] = {
        "p50_ms": round(percentile(latencies, 50), 2),
        "p95_ms": round(p95, 2),
        "bare_p50_ms": round(percentile(whole, 50), 2),
        "bare_p95_ms": round(ref_p95, 2),
        "p95_over_bare_p95": round(p95 / ref_p95, 2),
        "p50_over_bare_p50": round(percentile(latencies, 50) / percentile(whole, 50), 2),
        "hybrid_query_only_p50_ms": round(percentile(query_only, 50), 2),
        "hybrid_query_only_p95_ms": round(percentile(query_only, 95), 2),
        "goal_met": p95 <= GOAL_RATIO * ref_p95,
        "degraded_replies": degraded,
        "results_per_reply": round(found / max(len(latencies), 1), 1),
        "memories": args.memories,
        "other_tenants_memories": args.others,
        "requests": len(latencies),
        "loadavg": [round(load_before[0], 2), round(load_after[0], 2)],
        "mean_ms": round(statistics.mean(latencies), 2),
        **timings,
        **machine(),
    }
    print(
        f"\nmemory.search p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms; bare embed + hybrid query"
        f" p50 {result['bare_p50_ms']} ms, p95 {result['bare_p95_ms']} ms (query alone p50"
        f" {result['hybrid_query_only_p50_ms']} ms); ratio of p95s {result['p95_over_bare_p95']}x,"
        f" of p50s {result['p50_over_bare_p50']}x"
        f" (goal {GOAL_RATIO:.0f}x: {'met' if result['goal_met'] else 'NOT met'})"
    )
    return result


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--memories", type=int, default=100_000, help="memories of the measured tenant")
    parser.add_argument("--others", type=int, default=200_000, help="memories of 4 other tenants")
    parser.add_argument("--pool", type=int, default=512, help="distinct embedded sentences the vectors derive from")
    parser.add_argument("--sigma", type=float, default=0.01, help="Gaussian noise per dimension on pool vectors")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    return parser.parse_args()


if __name__ == "__main__":
    print_result(asyncio.run(main(parse_args())))
