"""The summarizer's side of a conversation's summary stream, pure (no I/O): its live summaries (the fold), the
summary of a span of messages, which are due a consolidation, which an edit or delete makes stale, and the events
that replace them (the deciders the summarizer calls; the summaries read model projects the same events).

Live: a ``summary.created`` not followed by a ``summary.retired`` of the same id.

Consolidation (bounds memory): summaries are grouped by audience and type. When a group holds more than
``max_active`` live summaries, its ``consolidate_batch`` oldest (by first index, then id) fold into one
summary of the next level (``short_term`` -> ``consolidated`` -> ``long_term`` -> ``long_term``) with the same
audience, and the children are retired. Every member of the audience witnessed every child's messages, so it
witnessed their union: the presence rule survives folding. Folding repeats until no group is over the limit,
so after each handled event every (audience, level) group holds at most ``max_active`` live summaries, i.e. a
conversation holds at most ``3 * max_active`` live summaries per distinct audience.

Ids are deterministic over the children (consolidation) or over the stale summary and the triggering event
(recompute), so a redelivery appends duplicates the log drops, never new memories. ``EVENTS`` names the
stream's payload classes. The text of a summary (the extractive sentences, an LLM's answer, which child sentences a
consolidation keeps) is the summarizer's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, NamedTuple, Protocol

from mnemo.shared.events.envelope import EventEnvelope, deterministic_id
from mnemo.shared.events.recorded import (
    SUMMARY_CREATED,
    SUMMARY_RETIRED,
    Citation,
    SummaryCreated,
    SummaryRetired,
    SummaryType,
)


class Limits(Protocol):
    """How many live summaries a group keeps and how many fold at once (the summarizer's settings)."""

    @property
    def max_active(self) -> int: ...
    @property
    def consolidate_batch(self) -> int: ...


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


def oldest_first(s: SummaryCreated) -> tuple[int, int, str]:
    return (s.first_index, s.last_index, s.summary_id)


def due_batch(live: Sequence[SummaryCreated], settings: Limits) -> list[SummaryCreated] | None:
    """The oldest ``consolidate_batch`` summaries of the first over-full (level, audience) group, or None."""
    groups: dict[tuple[int, tuple[str, ...]], list[SummaryCreated]] = {}
    for s in live:
        groups.setdefault((LEVEL[s.summary_type], tuple(s.audience)), []).append(s)
    for key in sorted(groups):
        group = groups[key]
        if len(group) > settings.max_active:
            return sorted(group, key=oldest_first)[: settings.consolidate_batch]
    return None


def consolidation_id(tenant_id: str, user_id: str, conversation_id: str, child_ids: Sequence[str]) -> str:
    return deterministic_id("summary", tenant_id, user_id, conversation_id, "consolidation", *child_ids)


def recompute_id(tenant_id: str, user_id: str, conversation_id: str, stale_id: str, trigger_event_id: str) -> str:
    return deterministic_id("summary", tenant_id, user_id, conversation_id, "recompute", stale_id, trigger_event_id)


def retired_event_id(summary_id: str, reason: str) -> str:
    """One retirement per summary: a summary is retired once, whatever replaces it."""
    return deterministic_id("summary.retired", summary_id, reason)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


class SpanMessage(Protocol):
    """What a summary of a span reads of each message it covers."""

    @property
    def message_id(self) -> str: ...
    @property
    def created_at(self) -> datetime: ...


class Span(NamedTuple):
    """Where a summary's messages are: its conversation and their first and last index."""

    user_id: str
    conversation_id: str
    first_index: int
    last_index: int


def span_summary(
    summary_id: str, span: Span, messages: Sequence[SpanMessage], participants: Sequence[str], audience: Sequence[str],
    *, text: str, importance: float, method: str, prompt_version: str | None = None,
    emotional_context: str | None = None, citations: Sequence[Citation] = (),
) -> SummaryCreated:  # fmt: skip
    """A new short-term summary of ``span`` (``messages`` non-empty): their time span and ids, who took part, who
    may see it, and what it says (``text``...: the extractive sentences or an LLM's answer, the summarizer's)."""
    return SummaryCreated(
        summary_id=summary_id,
        user_id=span.user_id,
        conversation_id=span.conversation_id,
        summary_type="short_term",
        text=text,
        importance=importance,
        participants=list(participants),
        start_at=min(m.created_at for m in messages),
        end_at=max(m.created_at for m in messages),
        message_ids=[m.message_id for m in messages],
        first_index=span.first_index,
        last_index=span.last_index,
        method=method,
        prompt_version=prompt_version,
        emotional_context=emotional_context,
        audience=list(audience),
        citations=list(citations),
    )


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
    ordered = sorted(children, key=oldest_first)
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


RetireReason = Literal["consolidated", "stale", "edited", "deleted"]


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
        key=oldest_first,
    )
