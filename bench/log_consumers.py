"""`make bench-log-consumers`: the log consumers' CPU per event of a chat's log, beside what decoding every event
of that log costs, measured in the same run.

The log is what a roleplay chat leaves: ``--conversations`` conversations of ``--messages`` messages each (real
chat turns from the REALTALK dev set, `../shared/eval/realtalk`, read by path), each message with a bot and
the user's persona present, so ``message.recorded`` plus two ``knowledge.witnessed``; and ``--lorebooks``
imports of the 1.6 MB World Info fixture (`../shared/fixtures/lorebooks`) through the lore service's own
import (``lorebook.imported`` carries the book twice, normalised and as read). All of it is recorded and
relayed to JetStream before any clock runs. Then each log consumer runs alone, as it does in production (its
own core, broker and durable, created empty: it starts at the log's first event), until its durable holds
nothing (its embedding model loaded before): embedding, then the memory-extractor (the witnessings are in the log already: it appends only
duplicates), then the summarizer (last: the summaries it appends are in no other consumer's run).

Per consumer: the CPU of this process (the service's, plus the relay's for what it appends) over its run, per
event in the log, and the events its durable delivered. The reference, same run, bracketing the consumers:
the codec decoding every event of the log once from its wire form (what each consumer paid to look at every
event when each durable took ``mnemo.log.>``); ``ratio`` is a consumer's CPU per event over it. Beside it, once
consumers have handler tables (``mnemo.shared.subscriptions``), each one's reading apart from its work: decoding,
per event of the log, what its durable delivers as its table decrypts it (``reading_ratio``: over the reference).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from bench.common import CpuMeter, embedded_servers, machine, print_result, running_service
from bench.embedding import chat_appends, realtalk_texts
from mnemo.services.lore.books import LoreBooks
from mnemo.services.memory_extractor.appending import save_witnessings
from mnemo.shared import subjects
from mnemo.shared.aggregates.knowledge import witnesses_of
from mnemo.shared.bootstrap import Core, open_core
from mnemo.shared.eventlog.codec import EventCodec
from mnemo.shared.eventlog.save import EventSaver
from mnemo.shared.events.recorded import MessageRecorded
from mnemo.shared.readmodels.lore import LoreReadModel
from mnemo.shared.settings import Settings
from mnemo_client.wire.lore_contract import LoreImportRequest

LOREBOOK = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "lorebooks"
BIG_BOOK = "st-wi_monster-hunter_with-originalData.json"
TENANT = "bench"
CONSUMERS = ("embedding", "memory-extractor", "summarizer")


async def record(settings: Settings, texts: list[str], conversations: int, lorebooks: int) -> int:
    """The chat, its witnessings and the lorebook imports, appended and relayed; returns the log's size."""
    core = await open_core(settings)
    try:
        results = await core.store.append_batch(chat_appends(texts, conversations, bot_replies=True))
        recorded = [e for r in results if not isinstance(r, Exception) for e in r.committed]
        await core.relay.publish_committed(recorded)
        witnessings = [w for env in recorded for w in witnesses_of(TENANT, MessageRecorded.model_validate(env.payload))]
        saver = EventSaver(core.store, core.relay)
        await save_witnessings(saver, witnessings)
        books = LoreBooks(core.store, LoreReadModel(core.db, core.cipher), saver)
        data = json.loads((LOREBOOK / BIG_BOOK).read_text())
        for n in range(lorebooks):
            await books.import_book(
                LoreImportRequest(
                    tenant_id=TENANT, owner_user_id="bench-user", name=f"book {n}", data=data, attach_to_bots=["bot"]
                )
            )
        return await _log_size(core)
    finally:
        await core.close()


async def _log_size(core: Core) -> int:
    return int((await core.nc.jetstream().stream_info(subjects.LOG_STREAM)).state.messages)


async def decode_all(settings: Settings) -> tuple[float, int, dict[str, float]]:
    """CPU seconds per event to decode every event of the log once from its wire form (the reference), and per
    consumer, per event of the log, to decode what its durable delivers as its handler table reads it (the
    types it handles, only the fields it decrypts): the reading a consumer does, apart from its work."""
    core = await open_core(settings)
    try:
        docs = await core.store.events.find({}).to_list()
        wires = [(str(doc["type"]), EventCodec.to_wire(doc)) for doc in docs]
        await core.codec.from_wire(wires[0][1])  # keys loaded and cached, as in a running consumer
        began = time.process_time()
        for _, wire in wires:
            await core.codec.from_wire(wire)
        reference = (time.process_time() - began) / len(wires)
        reading: dict[str, float] = {}
        for name, table in _tables().items():
            began = time.process_time()
            for type_name, wire in wires:
                if type_name in table.types:
                    await core.codec.from_wire(wire, table.decrypted(type_name))
            reading[name] = (time.process_time() - began) / len(wires)
        return reference, len(wires), reading
    finally:
        await core.close()


def _tables() -> dict[str, Any]:
    """The consumers' handler tables (none before they had one: then every consumer read every event whole)."""
    try:
        from mnemo.services.embedding.domain import HANDLERS as embedding
        from mnemo.services.memory_extractor.handlers import HANDLERS as extractor
        from mnemo.services.summarizer.handlers import HANDLERS as summarizer
    except ImportError:
        return {}
    return {"embedding": embedding, "memory-extractor": extractor, "summarizer": summarizer}


async def consume(settings: Settings, name: str, pids: dict[str, int]) -> dict[str, Any]:
    """Run ``name`` alone until its durable holds nothing (twice in a row, 0.3 s apart: the summarizer appends)."""
    cpu = CpuMeter(pids)
    async with running_service(settings, name) as (core, _broker):
        js = core.nc.jetstream()
        durable = subjects.durable(name)
        if core.embedder is not None:
            await core.embedder.embed(["the model loads before the clock runs"])
        cpu.start()
        quiet = 0
        deadline = time.monotonic() + 1800
        while quiet < 2:
            info = await js.consumer_info(subjects.LOG_STREAM, durable)
            quiet = quiet + 1 if not info.num_pending and not info.num_ack_pending else 0
            if time.monotonic() > deadline:
                raise TimeoutError(f"{durable}: {info.num_pending} pending, {info.num_ack_pending} unacked")
            await asyncio.sleep(0.3 if quiet else 0.1)
        cpu.stop()
        events = await _log_size(core)
        delivered = int(info.delivered.consumer_seq)
    report = cpu.report(events)
    return {
        "cpu_us_per_event": report["this process"]["cpu_us_per_item"],
        "events_in_log": events,
        "delivered": delivered,
        "seconds": round(cpu.elapsed, 2),
        "servers_cpu_us_per_event": {k: v["cpu_us_per_item"] for k, v in report.items() if k != "this process"},
    }


async def main(conversations: int, messages: int, lorebooks: int) -> dict[str, Any]:
    texts = realtalk_texts(conversations * messages)
    async with embedded_servers() as backends:
        settings = backends.settings
        log_size = await record(settings, texts, conversations, lorebooks)
        before, _, reading_before = await decode_all(settings)
        consumers = {name: await consume(settings, name, backends.pids) for name in CONSUMERS}
        after, decoded, reading_after = await decode_all(settings)
    reference_us = (before + after) / 2 * 1e6
    for name, c in consumers.items():
        if name in reading_before:
            reading_us = (reading_before[name] + reading_after[name]) / 2 * 1e6
            c["reading_us_per_event"] = round(reading_us, 1)
            c["reading_ratio"] = round(reading_us / reference_us, 3)
    print(f"log: {log_size:,} events ({len(texts):,} messages, their witnessings, {lorebooks} lorebook import(s))")
    print(f"decoding every event once (reference): {reference_us:,.0f} CPU-us per event "
          f"(before {before * 1e6:,.0f}, after {after * 1e6:,.0f}; {decoded:,} events at the end)")  # fmt: skip
    for name, c in consumers.items():
        c["ratio"] = round(c["cpu_us_per_event"] / reference_us, 2)
        print(f"  {name}: {c['cpu_us_per_event']:,} CPU-us per log event ({c['ratio']}x the reference), "
              f"{c['delivered']:,} of {c['events_in_log']:,} events delivered, {c['seconds']} s")  # fmt: skip
        if "reading_us_per_event" in c:
            print(f"    reading what its durable delivers, as its table decrypts it: {c['reading_us_per_event']:,} "
                  f"CPU-us per log event ({c['reading_ratio']}x decoding every event whole)")  # fmt: skip
    return {
        "log_events": log_size,
        "messages": len(texts),
        "lorebooks": lorebooks,
        "reference_decode_us_per_event": round(reference_us),
        "reference_before_after_us": [round(before * 1e6), round(after * 1e6)],
        "consumers": consumers,
        **machine(),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--messages", type=int, default=60, help="per conversation")
    parser.add_argument("--lorebooks", type=int, default=2, help="imports of the 1.6 MB World Info fixture")
    args = parser.parse_args()
    print_result(asyncio.run(main(args.conversations, args.messages, args.lorebooks)))
