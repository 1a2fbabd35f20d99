"""The usage report's memory growth per type (``mnemo.rpc.ops.usage.v1`` with ``growth_days``) on a real
MongoDB-protocol server (SecantusDB) and a real vector index (Qdrant Edge): a property over many random
tenants, each holding random items of every source on random days. Each tenant's report counts exactly its own
live items per type and per day of the window, none of another tenant's, nothing deleted, retired or outside
the window; its points per kind are its own. (The counting alone, on both adapters: the usage counts' contract
suite.)"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mnemo.services.context_assembler.usage_report import UsageReport
from mnemo.shared.readmodels.usage_counts import MongoUsageCounts
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import VectorPoint
from mnemo_client.wire.ops_contract import UsageRequest
from tests.components import edge_index
from tests.growth_rows import DAYS, UNTIL, counted, grown

pytestmark = pytest.mark.integration


async def test_each_tenants_growth_is_its_own_live_items_per_type_and_day(mongo_db: Any, tmp_path: Path):
    rng = random.Random(29)
    tenants = [f"t{n}-{uuid.uuid4().hex[:6]}" for n in range(14)]
    expected = {t: grown(rng, t) for t in tenants}
    for made in expected.values():
        for collection, rows in made.rows.items():
            await mongo_db[collection].insert_many(rows)
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
        report = UsageReport(MongoUsageCounts(mongo_db), index)
        reply = await report.answer(UsageRequest(tenant_ids=tenants, until=UNTIL, growth_days=DAYS))
        plain = await report.answer(UsageRequest(tenant_ids=tenants[:1], until=UNTIL))

    assert reply.growth_since == UNTIL - timedelta(days=DAYS - 1)
    assert {u.tenant_id for u in reply.tenants} == set(tenants)
    for usage in reply.tenants:
        made = expected[usage.tenant_id]
        assert counted(usage.memory_types) == (dict(made.held), dict(made.added)), usage.tenant_id
        assert all([d.day for d in g.added] == sorted(d.day for d in g.added) for g in usage.memory_types)
        assert {k: n for k, n in usage.vectors_by_kind.items() if n} == dict(points[usage.tenant_id])
    assert (plain.tenants[0].memory_types, plain.tenants[0].vectors_by_kind, plain.growth_since) == ([], {}, None)
