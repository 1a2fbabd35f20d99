"""Operators' requests: the per-tenant usage report (admin only; the gateway asks it for an operator key's own tenant
only, ``/v1/operator/usage``; docs/operations.md)."""

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
        "Per-tenant usage: messages and vectors held now, context requests and tokens and LLM tokens per period; "
        "with `growth_days`, each memory type held and what was added per day, and the points per vector kind.",
        {
            "tenant_ids": ["t1"],
            "since": "2026-11-01",
            "until": "2026-11-30",
            "limit": 100,
            "offset": 0,
            "growth_days": 30,
        },
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
                    "memory_types": [
                        {
                            "source": "message",
                            "type": "message",
                            "held": 5210,
                            "added": [{"day": "2026-11-29", "added": 180}, {"day": "2026-11-30", "added": 64}],
                        },
                        {
                            "source": "knowledge",
                            "type": "semantic",
                            "held": 312,
                            "added": [{"day": "2026-11-30", "added": 9}],
                        },
                    ],
                    "vectors_by_kind": {"message": 5301, "summary": 240, "fact": 312, "lore_entry": 181},
                }
            ],
            "total": 1,
            "since": "2026-11-01",
            "until": "2026-11-30",
            "growth_since": "2026-11-01",
        },
        errors=("bad_request", "internal"),
        note="operators only: the `admin` NATS user in `--secure` deployments; no gateway route",
        audience="admin",
    ),
)
