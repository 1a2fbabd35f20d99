"""`make bench-context`: latency of ``mnemo.rpc.context.assemble.v1`` with 100,000 indexed items and a
400-entry lorebook, beside a raw NATS round trip, a raw vector query and one query embedding measured in the
same run, and the process's peak memory.

What it does, and why each choice:

- A fresh embedded stack in a temporary directory (nats-server, SecantusDB, Qdrant Edge, the bundled model,
  every service in this process on one core: ``mnemo/services/stack.all_services``), as ``make run`` runs it. The
  directory is removed at the end.
- Setup through the public contract: the bot and persona (``mnemo.chat.*.upserted.v1``); a 400-entry
  lorebook imported with ``mnemo.rpc.lore.import.v1`` and attached to the measured bot. The book is the real
  Monster Hunter World Info file (387 entries, ``../shared/fixtures/lorebooks/``, read by path, its
  ``originalData`` left out) grown to 400 entries by 13 varied copies of its first entries
  (``bench/context_data.lorebook_of_size``), imported as one file. Its ``lorebook.imported`` log event
  (normalised book + original file, encrypted) is about 1.5 MB: it needs the 8 MB ``max_payload`` the
  embedded nats-server is configured with (with NATS's default 1 MB the relay could never publish it and
  would retry every second). ``--lore-parts N`` imports it as N files attached to the same bot instead.
- The realistic share through the pipeline: two REALTALK chats (``../shared/eval/realtalk``) published as
  ``mnemo.chat.message.created.v1`` for ONE user with two bots: Chat 5 (1,548 turns, the measured
  conversation, with the lorebook's bot) and Chat 6 (1,511 turns, a second conversation). Ingest, embedding,
  the summarizer (extractive, no LLM) and the memory extractor run on them for real; the run waits until
  every consumer is idle. The measured conversation therefore has a long real history, real summaries
  (memories) and real vectors.
- The rest up to ``--items`` points of the tenant (100,000 by default) is bulk-loaded: conversations of 500
  messages spread round-robin over 8 users (the measured one included) and 4 bots, written into the read
  models by ``ReadModels.apply`` and into the index with the embedding service's own point plan; dense vectors
  reuse the embeddings of a pool of ``--pool`` distinct REALTALK turns from the other eight chats, each
  perturbed (Gaussian, cosine ~0.98 to the original), sparse vectors are the real ``document_vector`` of each
  text (``bench/context_load.py``). The index is used as the stack leaves it (no ``optimize()`` call: the
  services never make one).
- Requests: ``--requests`` (300) ``user_message`` values, half real REALTALK questions about the two chats,
  half lines naming lorebook keys, sent one at a time (latency, not throughput) after ``--warmup`` (20)
  unmeasured ones, with the assembler's default settings. Every reply is checked (no error).
- References, in the same process once the requests are done: a NATS request-reply to an echo subscriber on
  another connection to the same server (same body size as an assemble request); a raw dense vector query
  with the assembler's message filter of the measured conversation, and the hybrid (dense + lexical) one; one
  query embedding; and, beside them, one MongoDB (SecantusDB) read by ``_id``, the unit of the read models'
  cost. Each is the median of as many calls as there are requests. The machine's load average before and
  after the requests is in the JSON too: the VM is shared.
- Peak RSS: ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` of this process, which holds every service, the
  model and the index (not nats-server or SecantusDB, which are children); it includes the loading phase.
- ``--bulk-beside``: the requests are measured while the stack's embedder embeds batches back to back, as the
  embedding service does under a backlog in embedded mode (``bench/context_bulk.py``).
- When p95 misses 50 ms (or with ``--profile``) it prints where one request's time goes
  (``bench/context_profile.py``).
- CPU per measured request (the event-loop thread's and the whole process's) and the garbage collections that
  ran during the requests (``bench/context_costs.py``): printed after the requests and in the JSON as ``costs``.
  They move far less with the shared VM's load than the latencies do, for an A/B of a hot-path change.

Ends with one JSON line: ``{"p50_ms", "p95_ms", "p99_ms", "nats_rtt_ms", "vector_query_ms", "embed_ms",
"peak_rss_mb", ...}``. Quick run: ``make bench-context ARGS="--items 20000"``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import resource
import statistics
import time
from pathlib import Path
from typing import Any

import nats
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.errors import NoRespondersError

from bench.common import embedded_backends, machine, percentile, print_result
from bench.context_bulk import BulkEmbedding
from bench.context_costs import RequestCosts, measured
from bench.context_data import lore_keys, lorebook_of_size, user_messages
from bench.context_load import single_chunk
from bench.context_profile import (
    as_json,
    breakdown,
    capture_gatherer,
    cpu_profile,
    lore_share,
    print_breakdown,
    print_cpu,
    print_timeline,
    timeline_json,
)
from bench.context_scene import Scene, prepare
from bench.retrieval import load_chats
from mnemo.runtime.stack import all_services
from mnemo.shared import subjects
from mnemo.shared.bootstrap import Core
from mnemo.shared.events.recorded import bot_stream
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.sparse import query_vector
from mnemo.shared.vectors import points
from mnemo.shared.vectors.port import VectorQuery
from mnemo_client.wire.contract import ContextAssembleRequest

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT / "shared" / "eval" / "realtalk"
DEFAULT_LOREBOOK = ROOT / "shared" / "fixtures" / "lorebooks" / "st-wi_monster-hunter_with-originalData.json"
MEASURED_CHAT = "Chat_5_Nicolas_Nebraas"
SECOND_CHAT = "Chat_6_Vanessa_Nicolas"
GOAL_FLOOR_RATIO = 3.0  # p95 at most this many times the same run's floor (issue 26)
ECHO_SUBJECT = "bench.context.echo"


def mb(kilobytes: int) -> float:
    return round(kilobytes / 1024, 1)


def current_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return mb(int(line.split()[1]))
    return 0.0


async def assemble_latencies(
    nc: NatsClient, bodies: list[bytes], warmup: int
) -> tuple[list[float], dict[str, int], list[int], RequestCosts]:
    """Milliseconds per request (one at a time), ``degraded`` counts, lore entries per reply, and the CPU and
    garbage collections of the measured requests (``context_costs.py``)."""
    degraded: dict[str, int] = {}
    lore_counts: list[int] = []
    for body in bodies[:warmup]:
        await nc.request(subjects.CONTEXT_ASSEMBLE, body, timeout=60)
    out: list[float] = []
    start_all = time.perf_counter()
    with measured(len(bodies) - warmup) as costs:
        for i, body in enumerate(bodies[warmup:], 1):
            start = time.perf_counter()
            msg = await nc.request(subjects.CONTEXT_ASSEMBLE, body, timeout=60)
            out.append((time.perf_counter() - start) * 1000)
            reply = json.loads(msg.data)
            if "error" in reply:
                raise RuntimeError(f"assemble failed: {reply['error']}")
            for d in reply.get("degraded", []):
                degraded[d] = degraded.get(d, 0) + 1
            lore_counts.append(sum(1 for s in reply.get("sources", []) if s.get("kind") == "lore"))
            if i % 50 == 0 or i == len(bodies) - warmup:
                print(
                    f"  {i}/{len(bodies) - warmup} requests ({time.perf_counter() - start_all:.1f}s),"
                    f" p50 so far {statistics.median(out):.1f} ms",
                    flush=True,
                )
    return out, degraded, lore_counts, costs


async def nats_rtt(url: str, nc: NatsClient, size: int, runs: int) -> list[float]:
    """Request-reply to an echo subscriber on its own connection to the same server."""
    echo_nc = await nats.connect(url)

    async def echo(msg: Msg) -> None:
        await msg.respond(msg.data)

    await echo_nc.subscribe(ECHO_SUBJECT, cb=echo)
    await echo_nc.flush()
    body = b"x" * size
    for _ in range(50):  # on a loaded machine the subscription may reach the server after the first request
        try:
            await nc.request(ECHO_SUBJECT, body, timeout=10)
            break
        except NoRespondersError:
            await asyncio.sleep(0.2)
    out = []
    try:
        for i in range(runs + 10):
            start = time.perf_counter()
            await nc.request(ECHO_SUBJECT, body, timeout=10)
            if i >= 10:
                out.append((time.perf_counter() - start) * 1000)
    finally:
        await echo_nc.drain()
    return out


async def raw_references(core: Core, scene: Scene, messages: list[str]) -> dict[str, list[float]]:
    """Embedding, dense and hybrid query of each message, on the stack's own embedder and index."""
    assert core.vectors is not None
    assert core.embedder is not None
    index, embedder = core.vectors, core.embedder
    # The assembler's message filter (mnemo/services/context_assembler/search/filters.messages_filter), built here
    # from the shared point schema so the reference does not depend on the assembler's internals.
    flt = points.witnessed_messages(scene.tenant, scene.user_id, scene.conversation_id, scene.bot_id)
    out: dict[str, list[float]] = {"embed": [], "dense": [], "hybrid": []}
    await embedder.embed(messages[:5])  # warm
    for text in messages:
        start = time.perf_counter()
        [vector] = await embedder.embed([text])
        out["embed"].append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        await index.search(VectorQuery.dense(vector, flt, 18, 0.3))
        out["dense"].append((time.perf_counter() - start) * 1000)
        sparse = query_vector(text)
        start = time.perf_counter()
        await index.hybrid_search(VectorQuery(vector, sparse, flt, 18, 0.3))
        out["hybrid"].append((time.perf_counter() - start) * 1000)
    return out


async def mongo_reads(core: Core, scene: Scene, runs: int) -> list[float]:
    """One read of one small document by ``_id`` (the bot's profile), as the read models do it."""
    models = ReadModels(core.db, core.cipher)
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        await models.bots.find_one({"_id": bot_stream(scene.tenant, scene.bot_id)})
        out.append((time.perf_counter() - start) * 1000)
    return out


async def send(nc: NatsClient, body: bytes) -> Any:
    return await nc.request(subjects.CONTEXT_ASSEMBLE, body, timeout=60)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    chats = {c.key: c for c in load_chats(args.data, None)}
    measured, second = chats[MEASURED_CHAT], chats[SECOND_CHAT]
    pool_source = [
        t.text for key, c in sorted(chats.items()) if key not in (MEASURED_CHAT, SECOND_CHAT) for t in c.turns
    ]
    pool_texts = single_chunk(pool_source)
    rng.shuffle(pool_texts)
    pool_texts = pool_texts[: args.pool]
    world_info = json.loads(args.lorebook.read_text())
    book = lorebook_of_size(world_info, args.lore_size)
    questions = [q.text for c in (measured, second) for q in c.questions]
    messages = user_messages(questions, lore_keys(book), args.requests + args.warmup, rng)
    print(
        f"{args.items:,} points, lorebook of {len(book['entries'])} entries from {args.lorebook.name},"
        f" {args.requests} requests",
        flush=True,
    )
    async with contextlib.AsyncExitStack() as stack:
        settings = await stack.enter_async_context(embedded_backends(args.state))
        with capture_gatherer() as built:
            core = await stack.enter_async_context(all_services(settings))
        nc = await nats.connect(settings.nats_url)
        try:
            prepared = await prepare(core, nc, (measured, second), book, pool_texts, args, args.state)
            scene = prepared.scene
            bodies = [json.dumps(scene.request(m)).encode() for m in messages]
            print(f"measuring {args.requests} context requests, one at a time ...", flush=True)
            load_before = os.getloadavg()
            bulk = None
            if args.bulk_beside:
                assert core.embedder is not None  # the embedded stack always has the bundled one
                bulk = BulkEmbedding(core.embedder, pool_texts, args.bulk_size)
            async with bulk or contextlib.nullcontext():
                latencies, degraded, lore_counts, costs = await assemble_latencies(nc, bodies, args.warmup)
            if bulk is not None:
                print(f"  {bulk.batches} bulk batches of {args.bulk_size} embedded beside the requests", flush=True)
            print(costs.summary(), flush=True)
            print("references in the same run: NATS echo, raw vector queries, one query embedding ...", flush=True)
            rtt = await nats_rtt(settings.nats_url, nc, int(statistics.median(len(b) for b in bodies)), args.requests)
            refs = await raw_references(core, scene, messages[args.warmup :])
            refs["mongo"] = await mongo_reads(core, scene, args.requests)
            load_after = os.getloadavg()
            p95 = percentile(latencies, 95)
            floor = statistics.median(refs["embed"]) + statistics.median(refs["hybrid"])
            floor += statistics.median(refs["mongo"]) + statistics.median(rtt)
            profile: dict[str, Any] = {}
            if args.profile or p95 > GOAL_FLOOR_RATIO * floor:
                print(
                    f"p95 {p95:.1f} ms vs goal {GOAL_FLOOR_RATIO:.0f}x the floor ({floor:.1f} ms):"
                    " where one request's time goes ...",
                    flush=True,
                )
                n = min(args.profile_requests, len(messages))
                reqs = [ContextAssembleRequest.model_validate(scene.request(m)) for m in messages[:n]]
                parts, when = await breakdown(built[0], reqs)
                print_breakdown(parts)
                print_timeline(when)
                cpu = await cpu_profile(send, nc, bodies[:n])
                print_cpu(cpu)
                profile = {
                    "parts_ms_per_request": as_json(parts),
                    "lore_activate_share": lore_share(parts),
                    "timeline_ms": timeline_json(when),
                    "cpu_top": [r[0] for r in cpu[:8]],
                }
        finally:
            await nc.drain()

    peak = mb(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    result: dict[str, Any] = {
        "p50_ms": round(percentile(latencies, 50), 2),
        "p95_ms": round(p95, 2),
        "p99_ms": round(percentile(latencies, 99), 2),
        # The physical floor of one reply: one query embedding + one hybrid query + one read by id + one NATS
        # round trip, each the median of this run's references; the goal is p95 within 3x of it.
        "floor_ms": round(floor, 2),
        "p95_over_floor": round(p95 / floor, 2),
        "nats_rtt_ms": round(statistics.median(rtt), 3),
        "vector_query_ms": round(statistics.median(refs["dense"]), 3),
        "embed_ms": round(statistics.median(refs["embed"]), 2),
        "peak_rss_mb": peak,
        "hybrid_query_ms": round(statistics.median(refs["hybrid"]), 3),
        "mongo_read_ms": round(statistics.median(refs["mongo"]), 3),
        # The machine's 1-minute load before and after the measured requests: the VM is shared.
        "loadavg": [round(load_before[0], 2), round(load_after[0], 2)],
        "requests": len(latencies),
        "items": prepared.total_points,
        "published_points": prepared.published_points,
        "measured_conversation_points": prepared.conversation_points,
        "reused_state": prepared.reused,
        "lorebook_entries": len(book["entries"]),
        "lore_entries_per_reply": round(statistics.mean(lore_counts), 1) if lore_counts else 0,
        "degraded_replies": degraded,
        "max_ms": round(max(latencies), 2),
        # --bulk-beside: batches the stack's embedder finished beside the measured requests (context_bulk.py).
        "bulk_batches_beside": bulk.batches if bulk is not None else 0,
        # CPU per measured request and the collections during them (bench/context_costs.py): less sensitive to
        # the shared VM's load than the latencies, for an A/B of a change on a busy machine.
        "costs": costs.as_json(),
        **prepared.timings,
        **profile,
        **machine(),
    }
    print(
        f"\ncontext.assemble p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms, p99 {result['p99_ms']} ms"
        f" = {p95 / floor:.1f}x the floor of {floor:.1f} ms"
        f" (goal {GOAL_FLOOR_RATIO:.0f}x: {'met' if p95 <= GOAL_FLOOR_RATIO * floor else 'NOT met'});"
        f" NATS echo {result['nats_rtt_ms']} ms, dense query {result['vector_query_ms']} ms,"
        f" hybrid query {result['hybrid_query_ms']} ms, embed {result['embed_ms']} ms,"
        f" MongoDB read by id {result['mongo_read_ms']} ms; peak RSS {peak} MB",
        flush=True,
    )
    return result


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000, help="points of the tenant in the index")
    parser.add_argument("--requests", type=int, default=300, help="measured context requests")
    parser.add_argument("--warmup", type=int, default=20, help="unmeasured requests first")
    parser.add_argument("--pool", type=int, default=2_000, help="distinct texts embedded for the bulk load")
    parser.add_argument("--users", type=int, default=8, help="users the bulk conversations are spread over")
    parser.add_argument("--conversation-size", type=int, default=500, help="messages per bulk conversation")
    parser.add_argument("--lore-size", type=int, default=400, help="entries of the attached lorebook")
    parser.add_argument("--lore-parts", type=int, default=1, help="import the book as this many files")
    parser.add_argument("--lorebook", type=Path, default=DEFAULT_LOREBOOK, help="a SillyTavern World Info file")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the REALTALK folder")
    parser.add_argument("--profile", action="store_true", help="print the time breakdown even if p95 is met")
    parser.add_argument("--profile-requests", type=int, default=50, help="requests the breakdown times")
    parser.add_argument("--turns", type=int, help="publish only the first N turns of each chat (a quick run)")
    parser.add_argument(
        "--bulk-beside", action="store_true", help="embed batches back to back beside the requests (context_bulk.py)"
    )
    parser.add_argument("--bulk-size", type=int, default=32, help="texts per --bulk-beside batch")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--state", type=Path, help="keep the stack's data here and reuse the scene found there (bench/context_scene.py)"
    )
    return parser.parse_args()


if __name__ == "__main__":
    print_result(asyncio.run(main(parse_args())))
