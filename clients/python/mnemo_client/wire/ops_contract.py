"""Public wire contract v1 of the operators' request-reply surface: the per-tenant usage report.

Operators only: on a secured deployment (``--secure``) only the ``admin`` NATS user may send it (the
``platform`` user is denied ``mnemo.rpc.ops.>``), and the HTTP gateway, which acts for tenants, asks it only
for the key's own tenant (``POST /v1/operator/usage``, a key with the operator right). Answered with ``UsageReply`` or ``ErrorReply`` (``bad_request``, ``internal``).

With ``growth_days`` the report also carries each tenant's memory growth per type: what it holds now and what
of it was made on each day of the window, and its vector points per kind (both optional: an old client that
does not ask gets neither, and an old reply without them reads as empty).
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import Field

from mnemo_client.wire.contract import Id, _Wire

MAX_GROWTH_DAYS = 366
#: Where an item lives (``memory.list``'s and ``memory.index_status``'s sources, with messages and documents):
#: ``memory`` a summary, ``legacy_lore`` the lore kept from one, ``knowledge`` a character's fact,
#: ``remembered`` a memory of the memory API, ``message`` a chat message, ``document_chunk`` an uploaded
#: document's chunk.
GrowthSource = Literal["message", "memory", "legacy_lore", "knowledge", "remembered", "document_chunk"]


class UsageRequest(_Wire):
    """`mnemo.rpc.ops.usage.v1`: what each tenant holds and consumed, for billing and capacity planning."""

    tenant_ids: list[Id] | None = Field(
        None, max_length=1000, description="only these tenants (default: every tenant with metered usage)"
    )
    since: date | None = Field(None, description="the first UTC day of the metered counts (default: the first)")
    until: date | None = Field(None, description="the last UTC day of the metered counts, included (default: today)")
    limit: int = Field(100, ge=1, le=1000, description="tenants per page, by tenant id")
    offset: int = Field(0, ge=0)
    growth_days: int = Field(
        0,
        ge=0,
        le=MAX_GROWTH_DAYS,
        description="also each memory type's growth (`memory_types`, `vectors_by_kind`) over this many UTC days "
        "up to `until` (default: today); 0: not asked",
    )


class DayCount(_Wire):
    day: date
    added: int = Field(..., description="items made that UTC day that are still held")


class MemoryTypeGrowth(_Wire):
    source: GrowthSource
    type: str = Field(
        ...,
        description="a summary type, `legacy_memory`, a fact type or a remembered memory's type; `message` and "
        "`document_chunk` for those sources",
    )
    held: int = Field(..., description="items of this type held now (not deleted, forgotten, retired or folded)")
    added: list[DayCount] = Field(
        default_factory=list,
        description="of those held, how many were made on each day of the window, oldest first (days with none "
        "left out). Made: a message's `created_at`, a summary's last message (`end_at`), legacy lore's "
        "`created_at`, a fact's `learned_at`, a remembered memory's `occurred_at`, a document's chunks the day "
        "its import completed",
    )


class TenantUsage(_Wire):
    tenant_id: str
    messages: int = Field(..., description="chat messages stored now (the message read model)")
    vectors: int = Field(..., description="points in the vector index now (messages, summaries, facts, lore)")
    context_requests: int = Field(0, description="context requests answered in the period")
    context_tokens: int = Field(0, description="tokens of the contexts assembled in the period")
    llm_prompt_tokens: int = Field(0, description="prompt tokens the LLM provider reported for this tenant's work")
    llm_completion_tokens: int = Field(0, description="completion tokens the LLM provider reported")
    memory_types: list[MemoryTypeGrowth] = Field(
        default_factory=list, description="with `growth_days`: each memory type held (none held: left out)"
    )
    vectors_by_kind: dict[str, int] = Field(
        default_factory=dict,
        description="with `growth_days`: points in the vector index per kind (`message`, `summary`, "
        "`legacy_memory`, `fact`, `memory`, `document_chunk`, `lore_entry`)",
    )


class UsageReply(_Wire):
    tenants: list[TenantUsage]
    total: int = Field(..., description="tenants matching the request (pages of `limit`)")
    since: date | None = None
    until: date | None = None
    growth_since: date | None = Field(None, description="the first day of the growth window (with `growth_days`)")
