"""`make bench-ingest`: messages/s from publish to durable log append, beside raw JetStream publishing.

Both figures are measured in the same run, on the same fresh embedded servers, with the same payloads and
the same publisher (``bench.publisher``: its own process, as a platform is, with pipelined publishes each
awaiting its JetStream ack):
- raw: publishing N messages to a plain JetStream stream;
- ingest: publishing N messages on their keyed subjects (``mnemo.chat.message.created.v2.<tenant>.<conversation>``,
  as the clients publish them; ``--v1`` for the v1 subject, through ingest's v1 router) with the ingest service
  running, until every ingest durable has acknowledged all of them (it acks only after the journaled append to
  the log and the read-model update), checked against the number of events in the log;
- store: the store's own limit, its reference: the event documents ingest wrote in that run, read back from
  the log and inserted again, in batches of ``delivery.ingest_batch_size`` like ingest's appends
  (``insert_many`` ordered, journaled: ``WriteConcern(j=True)``), into a fresh database on the same
  SecantusDB with the event log's indexes (``_id`` and the unique ``stream_version``). The reference holds
  the event documents only: ingest also writes, per batch, an outbox intent and receipt, and per message the
  read-model updates (conversation and message documents), which the reference leaves out, so the ratio is
  how close ingest comes to the bare inserts of its log, not to the store's limit for all its writes.

Beside the rates it reports where the CPU went during the ingest run: per process (the publisher; this one:
the ingest service; SecantusDB; nats-server), CPU microseconds per message and the share of one core it
kept busy, and ``cpu_bound_msgs_per_s``: the rate if every core of the machine were busy all the time at
those costs, an upper bound that no overlap of the stages can beat.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import nats
from nats.js import JetStreamContext
from pymongo import ASCENDING, AsyncMongoClient, IndexModel, WriteConcern

from bench.common import (
    CpuMeter,
    embedded_servers,
    machine,
    print_result,
    publish_until_ingested,
    running_service,
    wait_for_partitions,
)
from bench.publisher import publisher_process
from mnemo.shared import subjects
from mnemo.shared.contract_registry import operation
from mnemo.shared.streams import ensure_stream
from mnemo_client.wire.keyed import keyed_subject


def keyed_subjects(bodies: list[bytes]) -> list[str]:
    """Each ``message.created`` body's keyed subject, as a client publishes it."""
    template = operation(subjects.MESSAGE_CREATED).keyed_subject
    return [keyed_subject(template, json.loads(b)) for b in bodies]


def keyed_messages(bodies: list[bytes]) -> list[tuple[str, bytes]]:
    """(keyed subject, body) of each ``message.created`` body, for ``bench.publisher.publish_all``."""
    return list(zip(keyed_subjects(bodies), bodies, strict=True))


def payloads(n: int, conversations: int) -> list[bytes]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    out = []
    for i in range(n):
        out.append(
            json.dumps(
                {
                    "tenant_id": "bench",
                    "user_id": f"user-{i % conversations}",
                    "conversation_id": f"conv-{i % conversations}",
                    "message_id": f"m-{i:07d}",
                    "role": "user" if i % 2 == 0 else "assistant",
                    "author_id": "persona" if i % 2 == 0 else "bot",
                    "author_name": "Pat" if i % 2 == 0 else "Sage",
                    "content": f"Message {i}: a line of roleplay chat about the harbour, the storm and the map.",
                    "created_at": (start + timedelta(seconds=i)).isoformat(),
                    "bot_ids": ["bot"],
                    "persona_id": "persona",
                }
            ).encode()
        )
    return out


async def measure_raw(settings: Any, js: JetStreamContext, bodies: list[bytes]) -> float:
    await ensure_stream(js, "BENCH_RAW", ["bench.raw.>"])
    async with publisher_process(settings.nats_url, "bench.raw.messages", bodies) as publisher:
        published = await publisher.publish()
    return len(bodies) / published.seconds


async def measure_ingest(
    settings: Any, js: JetStreamContext, bodies: list[bytes], cpu: CpuMeter, *, v1: bool = False
) -> tuple[float, int]:
    subject: str | list[str] = subjects.MESSAGE_CREATED if v1 else keyed_subjects(bodies)
    async with running_service(settings, "ingest") as (core, _broker):
        await wait_for_partitions(js, settings.streams.ingest_partitions, 1)
        async with publisher_process(settings.nats_url, subject, bodies) as publisher:
            published, elapsed = await publish_until_ingested(publisher, js, cpu)
            cpu.add("publisher", published.cpu_seconds)
        recorded = await core.db["events"].count_documents({"type": "message.recorded"})
    return len(bodies) / elapsed, recorded


def batches(docs: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    """``docs`` in consecutive batches of at most ``size``, in order."""
    return [docs[i : i + size] for i in range(0, len(docs), size)]


async def measure_store(settings: Any, batch_size: int, cpu: CpuMeter) -> tuple[float, int]:
    """Seconds to insert the log's event documents again into a fresh database, journaled, batch by batch.

    Returns (seconds, documents). CPU is measured into ``cpu`` (this process as the client, SecantusDB)."""
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(settings.mongodb_url, tz_aware=True)
    try:
        docs = await client[settings.mongodb_db]["events"].find({}).sort([("recorded_at", ASCENDING)]).to_list(None)
        target = client["bench_store_limit"].get_collection("events", write_concern=WriteConcern(w=1, j=True))
        await target.create_indexes(
            [IndexModel([("stream_id", ASCENDING), ("version", ASCENDING)], unique=True, name="stream_version")]
        )
        chunks = batches(docs, batch_size)
        cpu.start()
        start = time.perf_counter()
        for chunk in chunks:
            await target.insert_many(chunk, ordered=True)
        seconds = time.perf_counter() - start
        cpu.stop()
        if await target.count_documents({}) != len(docs):
            raise SystemExit("the store reference lost documents")
    finally:
        await client.close()
    return seconds, len(docs)


async def main(n: int, conversations: int, v1: bool = False) -> dict[str, Any]:
    bodies = payloads(n, conversations)
    async with embedded_servers() as backends:
        cpu = CpuMeter(backends.pids)
        nc = await nats.connect(backends.settings.nats_url)
        try:
            js = nc.jetstream(timeout=30)
            raw = await measure_raw(backends.settings, js, bodies)
            ingest, recorded = await measure_ingest(backends.settings, js, bodies, cpu, v1=v1)
        finally:
            await nc.drain()
        store_cpu = CpuMeter({"secantusdb": backends.pids["secantusdb"]})
        batch_size = backends.settings.delivery.ingest_batch_size
        store_seconds, store_docs = await measure_store(backends.settings, batch_size, store_cpu)
    if recorded != n:
        raise SystemExit(f"ingest recorded {recorded} of {n} messages")
    per_process = cpu.report(n)
    total_us = sum(p["cpu_us_per_item"] for p in per_process.values())
    cpu_bound = (os.cpu_count() or 1) * 1e6 / total_us if total_us else 0.0
    print(f"raw JetStream publish: {raw:,.0f} msgs/s")
    print(f"ingest (publish -> durable append): {ingest:,.0f} msgs/s ({ingest / raw:.2f} of raw)")
    for name, p in per_process.items():
        print(f"  {name}: {p['cpu_us_per_item']} CPU-us per message, {p['busy']:.0%} of a core")
    print(f"  all cores busy at these costs: {cpu_bound:,.0f} msgs/s")
    store_docs_per_s = store_docs / store_seconds
    store_msgs_per_s = n / store_seconds
    print(
        f"store limit: the {store_docs:,} event documents of the run inserted again, journaled, {batch_size:,} per"
        f" insert_many: {store_docs_per_s:,.0f} docs/s = {store_msgs_per_s:,.0f} msgs/s;"
        f" ingest {ingest / store_msgs_per_s:.2f} of it"
    )
    for name, p in store_cpu.report(n).items():
        print(f"  {name}: {p['cpu_us_per_item']} CPU-us per message, {p['busy']:.0%} of a core")
    return {
        "ingest_msgs_per_s": round(ingest, 1),
        "raw_jetstream_msgs_per_s": round(raw, 1),
        "ratio": round(ingest / raw, 3),
        "cpu": per_process,
        "cpu_bound_msgs_per_s": round(cpu_bound),
        "store_insert_docs_per_s": round(store_docs_per_s, 1),
        "store_insert_msgs_per_s": round(store_msgs_per_s, 1),
        "store_docs": store_docs,
        "store_batch_size": batch_size,
        "ratio_to_store": round(ingest / store_msgs_per_s, 3),
        "store_cpu": store_cpu.report(n),
        "messages": n,
        "conversations": conversations,
        "subjects": "v1" if v1 else "keyed",
        **machine(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    # 20,000 messages: about 20 pulls of 1,024, so filling and draining the pipeline (the first pull waits
    # for nothing to overlap with, the last append for nothing after it) weighs little on the rate.
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--v1", action="store_true", help="publish on the v1 subject (through ingest's v1 router)")
    args = parser.parse_args()
    print_result(asyncio.run(main(args.messages, args.conversations, args.v1)))
