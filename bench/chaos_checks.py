"""What ``make chaos`` checks once the faults are over, read from the event log and the read models.

Each check counts what would show that a fault made work happen twice, or not at all:

- :func:`compare`: acknowledged messages lost, recorded twice, or recorded out of their publish order;
- :func:`duplicate_summaries`: active summaries of the same range, type and audience more than once;
- :func:`fact_counts`: facts learned twice from the same message with the same text, facts folded into more than
  one consolidation, and current facts of one character and user with the same text (a redelivered batch or two
  replicas racing on one conversation would make each).

The log is read with the cluster's own key (``FieldCipher`` over its ``kek.b64``), as the services read it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pymongo import AsyncMongoClient

from mnemo.shared.aggregates.knowledge import normalise
from mnemo.shared.crypto import FieldCipher, load_or_create_kek
from mnemo.shared.eventlog.codec import EventCodec
from mnemo.shared.eventlog.keystore import MongoKeyStore
from mnemo.shared.eventlog.mongo import MongoEventStore
from mnemo.shared.eventlog.port import EventStore
from mnemo.shared.events.recorded import (
    FACT_LEARNED,
    FACT_RETIRED,
    FACTS_CONSOLIDATED,
    MESSAGE_RECORDED,
    REGISTRY,
    conversation_stream,
    knowledge_stream,
)
from mnemo.shared.settings import Settings


@asynccontextmanager
async def event_log(mongodb_url: str, data_dir: Path) -> AsyncIterator[MongoEventStore]:
    """The cluster's event log, decrypting with its key."""
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongodb_url, tz_aware=True)
    try:
        db = client[Settings().mongodb_db]
        yield MongoEventStore(db, EventCodec(REGISTRY, FieldCipher(load_or_create_kek(data_dir), MongoKeyStore(db))))
    finally:
        await client.close()


async def recorded(store: EventStore, tenant: str, user: str, conversations: list[str]) -> dict[str, list[str]]:
    """Conversation -> the message ids its stream recorded, in log order."""
    out: dict[str, list[str]] = {}
    for conv in conversations:
        events = await store.read_stream(conversation_stream(tenant, user, conv))
        out[conv] = [e.payload["message_id"] for e in events if e.type == MESSAGE_RECORDED.name]
    return out


def _orders(published: list[str], got: list[str]) -> tuple[list[str], list[str]]:
    """The published messages the log holds, in log order (first occurrence) and in published order."""
    wanted = set(published)
    order = [m for m in dict.fromkeys(got) if m in wanted]
    held = set(order)
    return order, [m for m in published if m in held]


def compare(published: dict[str, list[str]], stored: dict[str, list[str]]) -> dict[str, int]:
    lost = duplicated = out_of_order = 0
    for conv, ids in published.items():
        got = stored.get(conv, [])
        lost += len(set(ids) - set(got))
        duplicated += len(got) - len(set(got))
        order, expected = _orders(ids, got)
        out_of_order += sum(a != b for a, b in zip(order, expected, strict=True))
    return {"lost": lost, "duplicated": duplicated, "out_of_order": out_of_order}


def displaced(published: dict[str, list[str]], stored: dict[str, list[str]]) -> dict[str, dict[str, object]]:
    """Per conversation recorded out of order: where its log first departs from the published order, and the
    message ids around it (published and recorded), so a failed run says which messages to look for in the logs."""
    out: dict[str, dict[str, object]] = {}
    for conv, ids in published.items():
        order, expected = _orders(ids, stored.get(conv, []))
        first = next((i for i, (a, b) in enumerate(zip(order, expected, strict=True)) if a != b), None)
        if first is not None:
            out[conv] = {
                "position": first,
                "recorded": order[first : first + 4],
                "published": expected[first : first + 4],
            }
    return out


async def duplicate_summaries(mongodb_url: str, tenant: str) -> int:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongodb_url)
    try:
        ranges: Counter[tuple[Any, ...]] = Counter()
        async for s in client[Settings().mongodb_db]["summaries"].find({"tenant_id": tenant, "status": "active"}):
            key = (s["conversation_id"], s["summary_type"], s["first_index"], s["last_index"], tuple(s["audience"]))
            ranges[key] += 1
        return sum(n - 1 for n in ranges.values() if n > 1)
    finally:
        await client.close()


def _extra(counts: Counter[Any]) -> int:
    return sum(n - 1 for n in counts.values() if n > 1)


async def fact_counts(store: EventStore, tenant: str, character: str) -> dict[str, int]:
    """``facts`` learned by ``character`` (from messages; consolidations counted apart) and ``duplicate_facts``:

    - a fact learned again from the same messages with the same text (the fact id is deterministic, so only a
      second id for the same learning would show here);
    - a fact folded into two consolidations (two replicas, or a redelivery, consolidating the same facts);
    - two current facts of the same user with the same text (the exact-duplicate rule lost a race).
    """
    events = await store.read_stream(knowledge_stream(tenant, character))
    learned: Counter[tuple[Any, ...]] = Counter()
    folded: Counter[str] = Counter()
    texts: dict[str, tuple[str, str]] = {}  # fact id -> (user, normalised text), of every fact still current
    retired: set[str] = set()
    consolidations = 0
    for e in events:
        p = e.payload
        if e.type == FACT_LEARNED.name:
            learned[(p["user_id"], tuple(p["message_ids"]), normalise(p["text"]))] += 1
            texts[p["fact_id"]] = (p["user_id"], normalise(p["text"]))
        elif e.type == FACTS_CONSOLIDATED.name:
            consolidations += 1
            folded.update(p["consolidates"])
            texts[p["fact_id"]] = (p["user_id"], normalise(p["text"]))
        elif e.type == FACT_RETIRED.name:
            retired.add(p["fact_id"])
    current = Counter(v for k, v in texts.items() if k not in folded and k not in retired)
    return {
        "facts": sum(learned.values()),
        "consolidations": consolidations,
        "duplicate_facts": _extra(learned) + _extra(folded) + _extra(current),
    }


async def unrelayed(store: MongoEventStore) -> list[str]:
    """Events in the log with an outbox intent and no receipt: committed, never confirmed published to JetStream,
    so no log consumer may have seen them (``missing_points`` counts their effect). One line each, oldest first:
    recorded_at, type, stream and version, event id; what to search the kept logs (``--keep``) for."""
    intended = {eid async for doc in store.intents.find({}, {"event_ids": 1}) for eid in doc["event_ids"]}
    async for doc in store.receipts.find({}, {"event_ids": 1}):
        intended.difference_update(doc["event_ids"])
    fields = {"type": 1, "stream_id": 1, "version": 1, "recorded_at": 1}
    events = [d async for d in store.events.find({"_id": {"$in": sorted(intended)}}, fields)]  # never committed: none
    events.sort(key=lambda d: (d["recorded_at"], d["stream_id"], d["version"]))
    return [f"{d['recorded_at'].isoformat()} {d['type']} {d['stream_id']}@{d['version']} {d['_id']}" for d in events]
