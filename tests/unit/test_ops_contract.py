"""The operators' usage report is in the contract, admin-only: the platform's NATS user is denied it, the
gateway (which acts for tenants) serves no route for it, and the context-assembler's user answers it."""

from __future__ import annotations

from mnemo.runtime.nats_auth import ADMIN, OPS_ALL, PLATFORM, grants, render_authorization
from mnemo.services.gateway.operations import OPERATIONS as GATEWAY
from mnemo.shared import contract_registry, subjects
from mnemo.shared.usage import UsageMeter


def test_the_usage_report_is_registered_for_operators_only():
    op = contract_registry.operation("ops.usage")
    assert (op.subject, op.audience, op.service) == (subjects.OPS_USAGE, "admin", "context-assembler")
    assert subjects.OPS_USAGE not in {g.subject for g in GATEWAY}
    assert all(contract_registry.operation(g.subject).audience == "platform" for g in GATEWAY)


def test_the_platform_is_denied_the_operators_subjects_and_the_admin_is_not():
    table = grants()
    assert OPS_ALL in table[PLATFORM].deny_publish
    assert subjects.OPS_USAGE.startswith(OPS_ALL.removesuffix(">"))
    assert table[ADMIN].deny_publish == ()
    assert subjects.OPS_USAGE in table["context-assembler"].subscribe
    assert f'deny: [\n          "{OPS_ALL}"' in render_authorization(dict.fromkeys(table, "x"))


def test_the_meter_adds_per_tenant_and_day_and_skips_nothing_counted():
    meter = UsageMeter()
    meter.add("t1", context_requests=1, context_tokens=300)
    meter.add("t1", context_requests=1, context_tokens=None, llm_prompt_tokens=0)
    meter.add("t2", llm_prompt_tokens=12)
    pending = {tenant: dict(counts) for (tenant, _day), counts in meter._pending.items()}
    assert pending == {"t1": {"context_requests": 2, "context_tokens": 300}, "t2": {"llm_prompt_tokens": 12}}
