"""Public wire contract v1 of the operators' request-reply surface: the per-tenant usage report.

Operators only: on a secured deployment (``--secure``) only the ``admin`` NATS user may send it (the
``platform`` user is denied ``mnemo.rpc.ops.>``), and the HTTP gateway, which acts for tenants, does not serve
it. Answered with ``UsageReply`` or ``ErrorReply`` (``bad_request``, ``internal``).
"""

from __future__ import annotations

from datetime import date

from pydantic import Field

from mnemo_client.wire.contract import Id, _Wire


class UsageRequest(_Wire):
    """`mnemo.rpc.ops.usage.v1`: what each tenant holds and consumed, for billing and capacity planning."""

    tenant_ids: list[Id] | None = Field(
        None, max_length=1000, description="only these tenants (default: every tenant with metered usage)"
    )
    since: date | None = Field(None, description="the first UTC day of the metered counts (default: the first)")
    until: date | None = Field(None, description="the last UTC day of the metered counts, included (default: today)")
    limit: int = Field(100, ge=1, le=1000, description="tenants per page, by tenant id")
    offset: int = Field(0, ge=0)


class TenantUsage(_Wire):
    tenant_id: str
    messages: int = Field(..., description="chat messages stored now (the message read model)")
    vectors: int = Field(..., description="points in the vector index now (messages, summaries, facts, lore)")
    context_requests: int = Field(0, description="context requests answered in the period")
    context_tokens: int = Field(0, description="tokens of the contexts assembled in the period")
    llm_prompt_tokens: int = Field(0, description="prompt tokens the LLM provider reported for this tenant's work")
    llm_completion_tokens: int = Field(0, description="completion tokens the LLM provider reported")


class UsageReply(_Wire):
    tenants: list[TenantUsage]
    total: int = Field(..., description="tenants matching the request (pages of `limit`)")
    since: date | None = None
    until: date | None = None
