"""Pure: a conversation's live summaries (folded from its summary stream), which are due a consolidation,
which an edit or delete makes stale, and the payloads that replace them.

Live: a ``summary.created`` not followed by a ``summary.retired`` of the same id.

Consolidation (bounds memory): summaries are grouped by audience and type. When a group holds more than
``max_active`` live summaries, its ``consolidate_batch`` oldest (by first index, then id) fold into one
summary of the next level (``short_term`` -> ``consolidated`` -> ``long_term`` -> ``long_term``) with the same
audience, and the children are retired. Every member of the audience witnessed every child's messages, so it
witnessed their union: the presence rule survives folding. Folding repeats until no group is over the limit,
so after each handled event every (audience, level) group holds at most ``max_active`` live summaries, i.e. a
conversation holds at most ``3 * max_active`` live summaries per distinct audience.

Ids are deterministic over the children (consolidation) or over the stale summary and the triggering event
(recompute), so a redelivery appends duplicates the log drops, never new memories.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from mnemo.services.summarizer.domain import Sentence, split_sentences
from mnemo.services.summarizer.settings import SummarizerSettings
from mnemo.shared.events.envelope import EventEnvelope, deterministic_id
from mnemo.shared.events.recorded import (
    SUMMARY_CREATED,
    SUMMARY_RETIRED,
    Citation,
    SummaryCreated,
    SummaryRetired,
    SummaryType,
)

LEVEL: dict[str, int] = {"short_term": 0, "consolidated": 1, "long_term": 2}
FOLDS_INTO: dict[str, SummaryType] = {
    "short_term": "consolidated",
    "consolidated": "long_term",
    "long_term": "long_term",
}


@dataclass(frozen=True)
class LiveSummary:
    summary: SummaryCreated
    causation_id: str | None  # the event that made it (an edit's id for a recomputed summary)


@dataclass
class LiveSet:
    """The live summaries of one conversation and the summary-stream version they were folded up to."""

    by_id: dict[str, LiveSummary] = field(default_factory=dict)
    version: int = 0

    def summaries(self) -> list[SummaryCreated]:
        return [live.summary for live in self.by_id.values()]


def _live_created(live: LiveSet, env: EventEnvelope) -> None:
    s = SUMMARY_CREATED.parse(env.payload)
    live.by_id[s.summary_id] = LiveSummary(s, env.causation_id)


def _live_retired(live: LiveSet, env: EventEnvelope) -> None:
    live.by_id.pop(SUMMARY_RETIRED.parse(env.payload).summary_id, None)


# Event type -> how it changes the live set; any other type only advances the version.
_FOLD_LIVE: dict[str, Callable[[LiveSet, EventEnvelope], None]] = {
    SUMMARY_CREATED.name: _live_created,
    SUMMARY_RETIRED.name: _live_retired,
}


def fold_live(events: Iterable[EventEnvelope]) -> LiveSet:
    """Fold a summary stream (any order; applied by version) into its live summaries."""
    live = LiveSet()
    for env in sorted(events, key=lambda e: e.version):
        live.version = max(live.version, env.version)
        on_event = _FOLD_LIVE.get(env.type)
        if on_event is not None:
            on_event(live, env)
    return live


def _oldest_first(s: SummaryCreated) -> tuple[int, int, str]:
    return (s.first_index, s.last_index, s.summary_id)


def due_batch(live: Sequence[SummaryCreated], settings: SummarizerSettings) -> list[SummaryCreated] | None:
    """The oldest ``consolidate_batch`` summaries of the first over-full (level, audience) group, or None."""
    groups: dict[tuple[int, tuple[str, ...]], list[SummaryCreated]] = {}
    for s in live:
        groups.setdefault((LEVEL[s.summary_type], tuple(s.audience)), []).append(s)
    for key in sorted(groups):
        group = groups[key]
        if len(group) > settings.max_active:
            return sorted(group, key=_oldest_first)[: settings.consolidate_batch]
    return None


def consolidation_id(tenant_id: str, user_id: str, conversation_id: str, child_ids: Sequence[str]) -> str:
    return deterministic_id("summary", tenant_id, user_id, conversation_id, "consolidation", *child_ids)


def recompute_id(tenant_id: str, user_id: str, conversation_id: str, stale_id: str, trigger_event_id: str) -> str:
    return deterministic_id("summary", tenant_id, user_id, conversation_id, "recompute", stale_id, trigger_event_id)


def retired_event_id(summary_id: str, reason: str) -> str:
    """One retirement per summary: a summary is retired once, whatever replaces it."""
    return deterministic_id("summary.retired", summary_id, reason)


def child_sentences(children: Sequence[SummaryCreated], limit: int) -> list[Sentence]:
    """The children's sentences in child order (oldest first), for an extractive consolidation."""
    out: list[Sentence] = []
    for pos, child in enumerate(sorted(children, key=_oldest_first)):
        for text in split_sentences(child.text):
            if len(out) >= limit:
                return out
            out.append(Sentence(pos, len(out), text))
    return out


def sentence_sources(child: SummaryCreated, sentence: str, at: int) -> list[str]:
    """The messages ``sentence`` (found at ``at`` in ``child.text``) was taken from: the child's citations that
    overlap it, or everything the child covers when it cites nothing (an LLM summary)."""
    end = at + len(sentence)
    overlapping = [c.message_id for c in child.citations if c.start < end and at < c.end]
    return list(dict.fromkeys(overlapping)) if child.citations else list(child.message_ids)


def joined_with_citations(children: Sequence[SummaryCreated], picked: Sequence[Sentence]) -> tuple[str, list[Citation]]:
    """The picked child sentences (``child_sentences``' output: ``message_pos`` is the child's place in
    oldest-first order) joined by spaces, and where each one came from: the children's citations carried
    over, so a consolidation cites the turns its text still holds, not every turn its children covered."""
    ordered = sorted(children, key=_oldest_first)
    offsets = _sentence_offsets(ordered)
    text = ""
    citations: list[Citation] = []
    for s in picked:
        if text:
            text += " "
        child = ordered[s.message_pos]
        at = offsets.get((s.message_pos, s.order), 0)
        start = len(text)
        citations += [
            Citation(message_id=m, start=start, end=start + len(s.text)) for m in sentence_sources(child, s.text, at)
        ]
        text += s.text
    return text, citations


def _sentence_offsets(ordered: Sequence[SummaryCreated]) -> dict[tuple[int, int], int]:
    """Where each of ``child_sentences``' sentences starts in its child's text, keyed (child, order)."""
    out: dict[tuple[int, int], int] = {}
    order = 0
    for pos, child in enumerate(ordered):
        cursor = 0
        for text in split_sentences(child.text):
            at = child.text.find(text, cursor)
            out[(pos, order)] = max(at, 0)
            cursor = at + len(text) if at >= 0 else cursor
            order += 1
    return out


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def consolidated_payload(
    *,
    summary_id: str,
    children: Sequence[SummaryCreated],
    text: str,
    method: str,
    prompt_version: str | None = None,
    emotional_context: str | None = None,
    citations: Sequence[Citation] = (),
) -> SummaryCreated:
    """The summary that replaces ``children`` (same audience, non-empty): the next level, their span, the
    union of their messages and participants, and the highest importance."""
    ordered = sorted(children, key=_oldest_first)
    first = ordered[0]
    return SummaryCreated(
        summary_id=summary_id,
        user_id=first.user_id,
        conversation_id=first.conversation_id,
        summary_type=FOLDS_INTO[first.summary_type],
        text=text,
        importance=max(c.importance for c in ordered),
        participants=_unique(p for c in ordered for p in c.participants),
        start_at=min(c.start_at for c in ordered),
        end_at=max(c.end_at for c in ordered),
        message_ids=_unique(m for c in ordered for m in c.message_ids),
        first_index=min(c.first_index for c in ordered),
        last_index=max(c.last_index for c in ordered),
        method=method,
        prompt_version=prompt_version,
        emotional_context=emotional_context,
        audience=list(first.audience),
        consolidates=[c.summary_id for c in ordered],
        citations=list(citations),
    )


RetireReason = Literal["consolidated", "stale", "deleted"]


def retirement(
    summary: SummaryCreated, reason: RetireReason, replaced_by: str | None, at: datetime
) -> tuple[str, SummaryRetired]:
    """The ``summary.retired`` event id and payload for ``summary``."""
    payload = SummaryRetired(
        summary_id=summary.summary_id,
        user_id=summary.user_id,
        conversation_id=summary.conversation_id,
        reason=reason,
        replaced_by=replaced_by,
        retired_at=at,
    )
    return retired_event_id(summary.summary_id, reason), payload


def stale_by(
    live: LiveSet, message_id: str, trigger_version: int, cause_versions: Mapping[str, int]
) -> list[SummaryCreated]:
    """Live summaries covering ``message_id`` that predate the edit or delete at ``trigger_version``.

    ``cause_versions``: conversation-stream version of each summary's causing event. A summary reflects its
    conversation up to that version (a range or a recomputation reads the log up to it; a consolidation's
    children were brought up to date before it), so one caused at or after the trigger is already current:
    that is what makes a redelivered (or late) edit append nothing. A summary of unknown cause is stale.
    """
    return sorted(
        (
            x.summary
            for x in live.by_id.values()
            if message_id in x.summary.message_ids and cause_versions.get(x.causation_id or "", 0) < trigger_version
        ),
        key=_oldest_first,
    )
