"""``mnemo.rpc.ops.usage.v1``: the per-tenant usage report (``mnemo.shared.usage``), answered by the
context-assembler because it holds both halves: the database (the metered counts, the message read model) and
a whole vector index (its shard in stream mode), so ``vectors`` is counted where the points are.

Tenants are the request's, or every tenant with metered usage, by id, one page of ``limit``; ``messages`` and
``vectors`` are what each holds now (an indexed count per tenant), the metered fields are summed over the UTC
days ``since`` .. ``until``. With ``growth_days`` each tenant also gets its memory growth per type and its
points per kind (``memory_growth.py``).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from mnemo.services.context_assembler.memory_growth import memory_growth, vectors_by_kind, window
from mnemo.shared.readmodels.repository import MESSAGES
from mnemo.shared.usage import COLLECTION, METERED
from mnemo.shared.vectors.port import TENANT_FIELD, VectorFilter, VectorIndex
from mnemo_client.wire.ops_contract import TenantUsage, UsageReply, UsageRequest


class UsageReport:
    def __init__(self, db: AsyncDatabase[dict[str, Any]], vectors: VectorIndex | None) -> None:
        self._db = db
        self._vectors = vectors

    async def answer(self, request: UsageRequest) -> UsageReply:
        if request.since and request.until and request.since > request.until:
            raise ValueError(f"since ({request.since}) is after until ({request.until})")
        days: dict[str, str] = {}
        if request.since:
            days["$gte"] = request.since.isoformat()
        if request.until:
            days["$lte"] = request.until.isoformat()
        in_period: dict[str, Any] = {"day": days} if days else {}
        if request.tenant_ids is not None:
            tenants = sorted(set(request.tenant_ids))
        else:
            tenants = sorted(await self._db[COLLECTION].distinct("tenant_id", in_period))
        page = tenants[request.offset : request.offset + request.limit]
        metered: dict[str, dict[str, int]] = {t: dict.fromkeys(METERED, 0) for t in page}
        rows = self._db[COLLECTION].find({"tenant_id": {"$in": page}, **in_period})
        async for row in rows:
            for field in METERED:
                metered[row["tenant_id"]][field] += int(row.get(field, 0))
        last_day = request.until or datetime.now(UTC).date()
        usage = [
            TenantUsage(
                tenant_id=tenant,
                messages=await self._db[MESSAGES].count_documents({"tenant_id": tenant}),
                vectors=await self._vectors.count(VectorFilter.where(**{TENANT_FIELD: tenant})) if self._vectors else 0,
                **metered[tenant],
                **(await self._growth(tenant, last_day, request.growth_days) if request.growth_days else {}),
            )
            for tenant in page
        ]
        growth_since = window(last_day, request.growth_days)[0] if request.growth_days else None
        return UsageReply(
            tenants=usage, total=len(tenants), since=request.since, until=request.until, growth_since=growth_since
        )

    async def _growth(self, tenant: str, until: date, days: int) -> dict[str, Any]:
        return {
            "memory_types": await memory_growth(self._db, tenant, until, days),
            "vectors_by_kind": await vectors_by_kind(self._vectors, tenant),
        }
