"""``summaries/<tenant>/<user>/<conversation>``: the summarizer's summaries.

A stream of its own, apart from the conversation's: summarizing never contends with ingest.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import Field

from mnemo.shared.events.envelope import stream_id
from mnemo.shared.events.recorded.base import REGISTRY, RecordedPayload


def summary_stream(tenant_id: str, user_id: str, conversation_id: str) -> str:
    return stream_id("summaries", tenant_id, user_id, conversation_id)


SummaryType = Literal["short_term", "long_term", "consolidated"]


class Citation(RecordedPayload):
    """Which message the stretch ``text[start:end]`` of a summary was taken from (an extractive summary keeps
    whole sentences of its messages, so it knows exactly where each came from)."""

    message_id: str
    start: int = Field(..., ge=0)
    end: int = Field(..., ge=0)


class SummaryCreated(RecordedPayload):
    summary_id: str
    user_id: str
    conversation_id: str
    summary_type: SummaryType
    text: str
    importance: int = Field(..., ge=1, le=10)
    participants: list[str] = Field(..., description="bot ids and persona ids present in the range")
    start_at: datetime
    end_at: datetime
    message_ids: list[str]
    first_index: int
    last_index: int
    method: str = Field(..., description="`extractive` (no LLM), `llm:<model>`, or `manual:<user>` (edited by hand)")
    prompt_version: str | None = Field(None, description="e.g. `summarize.v1` when an LLM wrote it")
    emotional_context: str | None = Field(None, description="the mood and how it shifted (LLM summaries)")
    audience: list[str] = Field(
        default_factory=lambda: [EVERYONE],
        description="the characters (bot and persona ids) who may be shown this summary: each witnessed every "
        "message it covers; `*` when the messages named no characters (no presence information)",
    )
    consolidates: list[str] = Field(
        default_factory=list, description="summary ids this `consolidated`/`long_term` summary replaces"
    )
    citations: list[Citation] = Field(
        default_factory=list,
        description="where each stretch of the text comes from (extractive summaries); empty when the text was "
        "written from all of `message_ids` (an LLM summary, or one recorded before citations existed)",
    )

    def cited_message_ids(self) -> list[str]:
        """The messages the text was derived from: those its citations name, else all it covers."""
        return cited_ids(self.citations, self.message_ids)


def cited_ids(citations: Sequence[Citation], covered: Sequence[str]) -> list[str]:
    """The distinct message ids of ``citations`` in text order, or ``covered`` when there are none."""
    if not citations:
        return list(covered)
    return list(dict.fromkeys(c.message_id for c in sorted(citations, key=lambda c: (c.start, c.end))))


EVERYONE = "*"
SUMMARY_CREATED = REGISTRY.register(
    "summary.created", SummaryCreated, encrypted=("text", "emotional_context"), key_owner="user_id"
)


class SummaryRetired(RecordedPayload):
    """A summary stops being a live memory: folded into a consolidation, made stale by an edit or delete of a
    message it covers (``replaced_by`` is its recomputation, if any), edited by its owner (``replaced_by`` is
    the new version, a ``summary.created`` of the memory service) or deleted by its owner. Its vectors are
    deleted; the ``summary.created`` event stays in the log."""

    summary_id: str
    user_id: str
    conversation_id: str
    reason: Literal["consolidated", "stale", "edited", "deleted"]
    replaced_by: str | None = None
    retired_at: datetime


SUMMARY_RETIRED = REGISTRY.register("summary.retired", SummaryRetired, key_owner="user_id")
