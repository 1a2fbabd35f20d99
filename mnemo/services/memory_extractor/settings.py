"""The memory-extractor's section of the settings tree (``MNEMO_MEMORY_EXTRACTOR__<KEY>``), read once at start."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mnemo.shared.aggregates.knowledge.curation import CONSOLIDATE_AT_LEAST, DEFAULT_CAP, NEAR_DUPLICATE

SECTION = "memory_extractor"


class KnowledgeSettings(BaseModel):
    """Section ``memory_extractor``: ``MNEMO_MEMORY_EXTRACTOR__CAP``, ``..._NEAR_DUPLICATE``,
    ``..._CONSOLIDATE_AT_LEAST``."""

    model_config = ConfigDict(frozen=True)

    cap: int = Field(DEFAULT_CAP, ge=2, description="current facts per character per user before consolidation")
    near_duplicate: float = Field(NEAR_DUPLICATE, gt=0, le=1, description="cosine at which a fact is a duplicate")
    consolidate_at_least: int = Field(CONSOLIDATE_AT_LEAST, ge=2, description="facts folded per consolidation")
