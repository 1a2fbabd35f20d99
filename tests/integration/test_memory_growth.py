"""The usage report's memory growth per type (``mnemo.rpc.ops.usage.v1`` with ``growth_days``) on a real
MongoDB-protocol server (SecantusDB) and a real vector index (Qdrant Edge): a property over many random
tenants, each holding random items of every source on random days. Each tenant's report counts exactly its own
live items per type and per day of the window, none of another tenant's, nothing deleted, retired or outside
the window; its points per kind are its own."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mnemo.services.context_assembler.memory_growth import SOURCES
from mnemo.services.context_assembler.usage_report import UsageReport
from mnemo.shared.readmodels import documents
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import VectorPoint
from mnemo_client.wire.ops_contract import UsageRequest
from tests.components import edge_index

pytestmark = pytest.mark.integration

UNTIL = date(2026, 11, 20)
DAYS = 7
TYPES = {"memory": ["short_term", "long_term", "consolidated"], "knowledge": ["episodic", "semantic"],
         "remembered": ["episodic", "procedural"], "message": ["message"], "legacy_lore": ["legacy_memory"]}  # fmt: skip
DEAD = {"message": {"deleted": True}, "memory": {"status": "deleted"}, "legacy_lore": {"deleted": True},
        "knowledge": {"status": "retired"}}  # fmt: skip
LIVE = {"message": {"deleted": False}, "memory": {"status": "active", "text": "x"}, "legacy_lore": {"deleted": False},
        "knowledge": {"status": "active"}, "remembered": {}}  # fmt: skip


def _when(rng: random.Random) -> datetime:
    """A time inside the window, or a few days before it."""
    return datetime.combine(UNTIL, datetime.min.time(), UTC) - timedelta(hours=rng.randint(0, 24 * (DAYS + 3)) - 23)


async def _seed(
    db: Any, rng: random.Random, tenant: str
) -> tuple[Counter[tuple[str, str]], Counter[tuple[str, str, date]]]:
    held: Counter[tuple[str, str]] = Counter()
    added: Counter[tuple[str, str, date]] = Counter()
    first = UNTIL - timedelta(days=DAYS - 1)
    for src in SOURCES:
        rows = []
        for _ in range(rng.randint(0, 6)):
            kind, made = rng.choice(TYPES[src.source]), _when(rng)
            dead = src.source in DEAD and rng.random() < 0.2
            row = {
                "_id": uuid.uuid4().hex,
                "tenant_id": tenant,
                src.made_at: made,
                **(DEAD if dead else LIVE)[src.source],
            }
            if src.type_field:
                row[src.type_field] = kind
            rows.append(row)
            if not dead:
                held[(src.source, kind)] += 1
                if first <= made.date() <= UNTIL:
                    added[(src.source, kind, made.date())] += 1
        if rows:
            await db[src.collection].insert_many(rows)
    for _ in range(rng.randint(0, 3)):  # documents: their chunks count on the day the import completed
        chunks, made, status = rng.randint(1, 4), _when(rng), rng.choice(["completed", "completed", "processing"])
        doc = {"_id": uuid.uuid4().hex, "tenant_id": tenant, "status": status, "deleted": False, "updated_at": made}
        await db[documents.DOCUMENTS].insert_one({**doc, "chunks": chunks})
        await db[documents.CHUNKS].insert_many([{"_id": uuid.uuid4().hex, "tenant_id": tenant} for _ in range(chunks)])
        held[("document_chunk", "document_chunk")] += chunks
        if status == "completed" and first <= made.date() <= UNTIL:
            added[("document_chunk", "document_chunk", made.date())] += chunks
    return held, added


async def test_each_tenants_growth_is_its_own_live_items_per_type_and_day(mongo_db: Any, tmp_path: Path):
    rng = random.Random(29)
    tenants = [f"t{n}-{uuid.uuid4().hex[:6]}" for n in range(14)]
    expected = {t: await _seed(mongo_db, rng, t) for t in tenants}
    points = {t: Counter(rng.choice(vp.KINDS) for _ in range(rng.randint(0, 5))) for t in tenants}
    shape = SimpleNamespace(dimensions=4)  # the index's size only: no model is needed to count points
    async with edge_index(tmp_path / "edge", shape) as index:
        await index.upsert(
            [
                VectorPoint(str(uuid.uuid4()), [0.1] * shape.dimensions, {vp.TENANT_ID: t, vp.KIND: kind})
                for t, kinds in points.items()
                for kind in kinds.elements()
            ]
        )
        report = UsageReport(mongo_db, index)
        reply = await report.answer(UsageRequest(tenant_ids=tenants, until=UNTIL, growth_days=DAYS))
        plain = await report.answer(UsageRequest(tenant_ids=tenants[:1], until=UNTIL))

    assert reply.growth_since == UNTIL - timedelta(days=DAYS - 1)
    assert {u.tenant_id for u in reply.tenants} == set(tenants)
    for usage in reply.tenants:
        held, added = expected[usage.tenant_id]
        assert {(g.source, g.type): g.held for g in usage.memory_types} == dict(held), usage.tenant_id
        got = {(g.source, g.type, d.day): d.added for g in usage.memory_types for d in g.added}
        assert got == dict(added), usage.tenant_id
        assert all([d.day for d in g.added] == sorted(d.day for d in g.added) for g in usage.memory_types)
        assert {k: n for k, n in usage.vectors_by_kind.items() if n} == dict(points[usage.tenant_id])
    assert (plain.tenants[0].memory_types, plain.tenants[0].vectors_by_kind, plain.growth_since) == ([], {}, None)
