"""``mnemo.rpc.ops.usage.v1``: the per-tenant usage report (``mnemo.shared.usage``), answered by the
context-assembler because it holds both halves: the rows the report counts (``deps.usage_counts``, the port of
``mnemo/shared/readmodels/usage_counts.py``: the metered counts, the messages, the memory growth) and a whole
vector index (its shard in stream mode), so ``vectors`` is counted where the points are.

Tenants are the request's, or every tenant with metered usage, by id, one page of ``limit``; ``messages`` and
``vectors`` are what each holds now (an indexed count per tenant), the metered fields are summed over the UTC
days ``since`` .. ``until``. With ``growth_days`` each tenant also gets its memory growth per type over the
window's days up to ``until`` (today without one) and its points per kind.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from mnemo.shared.readmodels.usage_counts import UsageCounts, window
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import VectorFilter, VectorIndex
from mnemo_client.wire.ops_contract import TenantUsage, UsageReply, UsageRequest


class UsageReport:
    def __init__(self, counts: UsageCounts, vectors: VectorIndex | None) -> None:
        self._counts = counts
        self._vectors = vectors

    async def answer(self, request: UsageRequest) -> UsageReply:
        since, until = request.since, request.until
        if since and until and since > until:
            raise ValueError(f"since ({since}) is after until ({until})")
        if request.tenant_ids is not None:
            tenants = sorted(set(request.tenant_ids))
        else:
            tenants = await self._counts.metered_tenants(since, until)
        page = tenants[request.offset : request.offset + request.limit]
        metered = await self._counts.metered(page, since, until)
        last_day = until or datetime.now(UTC).date()
        usage = [
            TenantUsage(
                tenant_id=tenant,
                messages=await self._counts.messages(tenant),
                vectors=await self._vectors.count(VectorFilter.where(**{vp.TENANT_ID: tenant})) if self._vectors else 0,
                **metered[tenant],
                **(await self._growth(tenant, last_day, request.growth_days) if request.growth_days else {}),
            )
            for tenant in page
        ]
        growth_since = window(last_day, request.growth_days)[0] if request.growth_days else None
        return UsageReply(tenants=usage, total=len(tenants), since=since, until=until, growth_since=growth_since)

    async def _growth(self, tenant: str, until: date, days: int) -> dict[str, Any]:
        _, start, end = window(until, days)
        return {
            "memory_types": await self._counts.growth(tenant, start, end),
            "vectors_by_kind": await self._vectors_by_kind(tenant),
        }

    async def _vectors_by_kind(self, tenant: str) -> dict[str, int]:
        """The tenant's points per kind (none without a vector index)."""
        if self._vectors is None:
            return {}
        index = self._vectors
        return {
            kind: await index.count(VectorFilter.where(**{vp.TENANT_ID: tenant, vp.KIND: kind})) for kind in vp.KINDS
        }
