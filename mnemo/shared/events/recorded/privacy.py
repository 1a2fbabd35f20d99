"""``privacy/<tenant>``: the record of each erasure (ids and counts, never content)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from mnemo.shared.events.envelope import stream_id
from mnemo.shared.events.recorded.base import REGISTRY, RecordedPayload


def privacy_stream(tenant_id: str) -> str:
    return stream_id("privacy", tenant_id)


class ErasureCompleted(RecordedPayload):
    """``erasure.completed``: a user (or, with ``user_id`` None, the whole tenant) was erased at ``erased_at``.

    Replay skips every event of that user (tenant) recorded before ``erased_at``; their encrypted fields
    no longer decrypt anyway (``key_ids`` destroyed)."""

    erasure_id: str
    user_id: str | None = Field(None, description="None: the whole tenant")
    key_ids: list[str] = Field(..., description="the destroyed data keys")
    deleted: dict[str, int] = Field(..., description="rows deleted per read model and messages per stream")
    lorebook_ids: list[str] = Field(default_factory=list, description="books of theirs that were deleted")
    document_ids: list[str] = Field(default_factory=list, description="documents of theirs that were deleted")
    erased_at: datetime


ERASURE_COMPLETED = REGISTRY.register("erasure.completed", ErasureCompleted)
