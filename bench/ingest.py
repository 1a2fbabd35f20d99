"""`make bench-ingest`: messages/s from publish to durable log append, beside raw JetStream publishing.

Both figures are measured in the same run, on the same fresh embedded servers, with the same payloads and
the same publisher (``bench.publisher``: its own process, as a platform is, with pipelined publishes each
awaiting its JetStream ack):
- raw: publishing N messages to a plain JetStream stream;
- ingest: publishing N messages on their keyed subjects (``mnemo.chat.message.created.v2.<tenant>.<conversation>``,
  as the clients publish them; ``--v1`` for the v1 subject, through ingest's v1 router) with the ingest service
  running, until every ingest durable has acknowledged all of them (it acks only after the journaled append to
  the log and the read-model update), checked against the number of events in the log;
- store: the store's own rate for the same documents, its reference: everything ingest wrote in that run, read
  back and written again into a fresh database on the same SecantusDB with the same indexes, with ingest's
  durability and in the fewest round trips the store allows: per ``delivery.ingest_batch_size`` messages one
  outbox intent, one ordered journaled ``insert_many`` of the events, one ``insert_many`` of their message rows,
  one ``bulk_write`` of the touched conversations' states and one outbox receipt (``ratio_to_store``). Until
  2026-11-27 the reference inserted the event documents alone, one document per message where ingest writes
  two plus the per-batch ones; that figure is still printed beside it (``ratio_to_store_events_only``).

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
from pymongo import ASCENDING, AsyncMongoClient, IndexModel, ReplaceOne, WriteConcern

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
            # Each message.created becomes one message.recorded event on the log.
            published, elapsed = await publish_until_ingested(publisher, js, cpu, log_events=len(bodies))
            cpu.add("publisher", published.cpu_seconds)
        recorded = await core.db["events"].count_documents({"type": "message.recorded"})
    return len(bodies) / elapsed, recorded


def batches(docs: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    """``docs`` in consecutive batches of at most ``size``, in order."""
    return [docs[i : i + size] for i in range(0, len(docs), size)]


async def _insert_again(target: Any, docs: list[dict[str, Any]], batch_size: int) -> float:
    """Seconds to insert ``docs`` into ``target`` (the event log's shape), ``batch_size`` per ordered insert."""
    start = time.perf_counter()
    for chunk in batches(docs, batch_size):
        await target.insert_many(chunk, ordered=True)
    return time.perf_counter() - start


async def _write_as_ingest(db: Any, run: dict[str, list[dict[str, Any]]], batch_size: int) -> float:
    """Seconds to write again every document ingest wrote, batch by batch, with ingest's durability.

    Per batch of ``batch_size`` messages, each one round trip: the outbox intent (one document naming the
    batch's event ids, journaled), the batch's events (one ordered journaled ``insert_many``), its message rows
    (one ``insert_many``, the read models' write concern), the states of the conversations it touched (one
    ``bulk_write`` of upserts) and the outbox receipt (journaled): what ingest writes per group-commit round,
    in the fewest round trips the store allows."""
    journaled = WriteConcern(w=1, j=True)
    events = db.get_collection("events", write_concern=journaled)
    intents = db.get_collection("relay_intents", write_concern=journaled)
    receipts = db.get_collection("relay_receipts", write_concern=journaled)
    messages, conversations = db["rm_messages"], db["rm_conversations"]
    states = {d["_id"]: d for d in run["conversations"]}
    start = time.perf_counter()
    for i in range(0, len(run["events"]), batch_size):
        chunk = run["events"][i : i + batch_size]
        ids = [d["_id"] for d in chunk]
        await intents.insert_one({"_id": f"intent-{i}", "event_ids": ids, "at": chunk[0]["recorded_at"]})
        await events.insert_many(chunk, ordered=True)
        await messages.insert_many(run["messages"][i : i + batch_size], ordered=False)
        touched = dict.fromkeys(d["stream_id"] for d in chunk)
        await conversations.bulk_write(
            [ReplaceOne({"_id": sid}, states[sid], upsert=True) for sid in touched if sid in states], ordered=False
        )
        await receipts.insert_one({"_id": f"receipt-{i}", "event_ids": ids, "at": chunk[-1]["recorded_at"]})
    return time.perf_counter() - start


async def measure_store(settings: Any, batch_size: int, cpu: dict[str, CpuMeter]) -> dict[str, float]:
    """Seconds the store takes to write again the documents ingest wrote in the run, into fresh databases on the
    same SecantusDB with the same indexes, ``batch_size`` messages per round (CPU into ``cpu[<name>]``):

    - ``events``: the event documents alone (the reference until 2026-11-27: one document per message);
    - ``all``: everything ingest wrote for them (``_write_as_ingest``): per message the event and its message
      row, per batch the outbox intent and receipt and the conversation states."""
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(settings.mongodb_url, tz_aware=True)
    try:
        source = client[settings.mongodb_db]
        run = {
            "events": await source["events"].find({}).sort([("recorded_at", ASCENDING)]).to_list(None),
            "messages": await source["rm_messages"].find({}).sort([("_id", ASCENDING)]).to_list(None),
            "conversations": await source["rm_conversations"].find({}).to_list(None),
        }
        log_index = IndexModel([("stream_id", ASCENDING), ("version", ASCENDING)], unique=True, name="stream_version")
        events_only = client["bench_store_events"].get_collection("events", write_concern=WriteConcern(w=1, j=True))
        await events_only.create_indexes([log_index])
        everything = client["bench_store_all"]
        await everything["events"].create_indexes([log_index])
        await _copy_indexes(source, everything)
        cpu["events"].start()
        events_seconds = await _insert_again(events_only, run["events"], batch_size)
        cpu["events"].stop()
        cpu["all"].start()
        all_seconds = await _write_as_ingest(everything, run, batch_size)
        cpu["all"].stop()
        if await events_only.count_documents({}) != len(run["events"]):
            raise SystemExit("the store reference lost documents")
        if await everything["rm_messages"].count_documents({}) != len(run["messages"]):
            raise SystemExit("the store reference lost message rows")
    finally:
        await client.close()
    return {"events": events_seconds, "all": all_seconds, "message_rows": len(run["messages"])}


async def _copy_indexes(source: Any, target: Any) -> None:
    """The read models' secondary indexes (and the outbox's), so the reference pays the same index upkeep."""
    for name in ("rm_messages", "rm_conversations", "relay_intents", "relay_receipts"):
        info = await source[name].index_information()
        models = [
            IndexModel(spec["key"], name=index, **{k: v for k, v in spec.items() if k in _INDEX_OPTIONS})
            for index, spec in info.items()
            if index != "_id_"
        ]
        if models:
            await target[name].create_indexes(models)


_INDEX_OPTIONS = ("unique", "sparse", "expireAfterSeconds", "partialFilterExpression")


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
        store_cpu = {ref: CpuMeter({"secantusdb": backends.pids["secantusdb"]}) for ref in ("events", "all")}
        batch_size = backends.settings.delivery.ingest_batch_size
        store = await measure_store(backends.settings, batch_size, store_cpu)
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
    store_msgs_per_s = n / store["all"]
    events_msgs_per_s = n / store["events"]
    print(
        f"store reference: the run's documents written again as ingest writes them ({n:,} events and"
        f" {store['message_rows']:,.0f} message rows, per {batch_size:,} messages one outbox intent, one insert of"
        f" the events (ordered, journaled), one of the message rows, one write of the conversation states, one"
        f" receipt): {store_msgs_per_s:,.0f} msgs/s; ingest {ingest / store_msgs_per_s:.2f} of it"
    )
    for name, p in store_cpu["all"].report(n).items():
        print(f"  {name}: {p['cpu_us_per_item']} CPU-us per message, {p['busy']:.0%} of a core")
    print(
        f"the event documents alone (the reference until 2026-11-27), {batch_size:,} per ordered journaled"
        f" insert_many: {events_msgs_per_s:,.0f} msgs/s; ingest {ingest / events_msgs_per_s:.2f} of it"
    )
    return {
        "ingest_msgs_per_s": round(ingest, 1),
        "raw_jetstream_msgs_per_s": round(raw, 1),
        "ratio": round(ingest / raw, 3),
        "cpu": per_process,
        "cpu_bound_msgs_per_s": round(cpu_bound),
        "store_msgs_per_s": round(store_msgs_per_s, 1),
        "store_batch_size": batch_size,
        "ratio_to_store": round(ingest / store_msgs_per_s, 3),
        "store_cpu": store_cpu["all"].report(n),
        "store_events_only_msgs_per_s": round(events_msgs_per_s, 1),
        "ratio_to_store_events_only": round(ingest / events_msgs_per_s, 3),
        "store_events_only_cpu": store_cpu["events"].report(n),
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
