"""The summarizer's pure logic in one import, for its handlers and tests. Each part lives in its own module:

- :mod:`mnemo.services.summarizer.triggers`: when a conversation is due a summary (count and token triggers), the
  ranges they close and the summaries' deterministic ids.
- :mod:`mnemo.services.summarizer.audience`: who may see a summary (the "hive mind" presence rule).
- :mod:`mnemo.services.summarizer.sentences`: a range's messages split into sentences.
- :mod:`mnemo.services.summarizer.extractive`: the extractive summary (no LLM) and its ``summary.created`` payload.
- :mod:`mnemo.services.summarizer.importance`: a summary's importance, a documented heuristic.
"""

from __future__ import annotations

from mnemo.services.summarizer.audience import AudiencePart, RangeMessage, participants_of, presence_parts
from mnemo.services.summarizer.extractive import centrality, compose_summary, pick_central, render_summary
from mnemo.services.summarizer.importance import SIGNIFICANT, importance
from mnemo.services.summarizer.sentences import Sentence, sentences_of, split_sentences
from mnemo.services.summarizer.settings import SummarizerSettings
from mnemo.services.summarizer.triggers import (
    SummaryRange,
    TriggerState,
    advance,
    due_range,
    fold_segment,
    is_count_boundary,
    segment_start,
    summary_id,
)

__all__ = [
    "SIGNIFICANT",
    "AudiencePart",
    "RangeMessage",
    "Sentence",
    "SummarizerSettings",
    "SummaryRange",
    "TriggerState",
    "advance",
    "centrality",
    "compose_summary",
    "due_range",
    "fold_segment",
    "importance",
    "is_count_boundary",
    "participants_of",
    "pick_central",
    "presence_parts",
    "render_summary",
    "segment_start",
    "sentences_of",
    "split_sentences",
    "summary_id",
]
