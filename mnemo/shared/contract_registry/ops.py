"""Operators' requests: the per-tenant usage report (admin only, not served by the gateway; docs/operations.md)."""

from __future__ import annotations

from mnemo.shared import subjects
from mnemo.shared.contract_registry.operation import Operation, rpc
from mnemo_client.wire import ops_contract as oc

OPERATIONS: tuple[Operation, ...] = (
    rpc(
        "ops.usage",
        subjects.OPS_USAGE,
        oc.UsageRequest,
        oc.UsageReply,
        "context-assembler",
        "Per-tenant usage: messages and vectors held now, context requests and tokens and LLM tokens per period.",
        {"tenant_ids": ["t1"], "since": "2026-11-01", "until": "2026-11-30", "limit": 100, "offset": 0},
        {
            "tenants": [
                {
                    "tenant_id": "t1",
                    "messages": 5210,
                    "vectors": 6034,
                    "context_requests": 912,
                    "context_tokens": 1830400,
                    "llm_prompt_tokens": 402113,
                    "llm_completion_tokens": 51220,
                }
            ],
            "total": 1,
            "since": "2026-11-01",
            "until": "2026-11-30",
        },
        errors=("bad_request", "internal"),
        note="operators only: the `admin` NATS user in `--secure` deployments; no gateway route",
        audience="admin",
    ),
)
