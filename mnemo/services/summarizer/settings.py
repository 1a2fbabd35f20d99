"""The summarizer's section of the settings tree (``MNEMO_SUMMARIZER__<KEY>``), read once at start."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

SECTION = "summarizer"


class SummarizerSettings(BaseModel):
    """Section ``summarizer``: ``MNEMO_SUMMARIZER__FIRST_AT``, ``MNEMO_SUMMARIZER__EVERY``, ..."""

    model_config = ConfigDict(frozen=True)

    first_at: int = Field(5, ge=1, description="messages in the conversation when the first summary is made")
    every: int = Field(20, ge=1, description="messages per summary after the first one")
    max_tokens: int = Field(120, ge=10, description="cap of an extractive summary's text")
    duplicate_cosine: float = Field(0.95, description="sentences this similar to a chosen one are skipped")
    min_relative_centrality: float = Field(
        0.6, ge=0, le=1, description="sentences scoring below this share of the best score are never picked"
    )
    max_sentences: int = Field(400, ge=1, description="sentences embedded per summary (spread over the range)")
    llm_max_input_tokens: int = Field(
        16_000, ge=100, description="longer transcripts (recomputed consolidations) are summarized extractively"
    )
    token_trigger: int = Field(
        10_000, ge=1, description="unsummarized recorded tokens that close a range before the count trigger"
    )
    token_target: int = Field(500, ge=10, description="cap of a summary of a range closed by the token trigger")
    max_active: int = Field(8, ge=1, description="live summaries per audience and level before consolidating")
    consolidate_batch: int = Field(4, ge=2, description="oldest summaries folded into one consolidation")
    consolidate_max_tokens: int = Field(250, ge=10, description="cap of an extractive consolidated summary")
    tenants: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description='per-tenant overrides, e.g. MNEMO_SUMMARIZER__TENANTS=\'{"t1": {"every": 10}}\'',
    )

    @model_validator(mode="after")
    def _batch_fits(self) -> Self:
        if self.consolidate_batch > self.max_active + 1:
            raise ValueError("consolidate_batch must be at most max_active + 1, or consolidation never runs")
        return self

    def for_tenant(self, tenant_id: str) -> SummarizerSettings:
        """These settings with the tenant's overrides applied (validated like the defaults)."""
        override = self.tenants.get(tenant_id)
        if not override:
            return self
        return SummarizerSettings.model_validate({**self.model_dump(exclude={"tenants"}), **override})
