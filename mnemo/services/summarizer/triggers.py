"""When a conversation is due a summary: the count and token triggers, and the ranges they close.

Count trigger: the first summary covers messages ``0 .. first_at-1`` and is due when the message with index
``first_at-1`` is recorded; after that one summary per ``every`` messages (``first_at .. first_at+every-1``,
...). With the defaults (5, 20) the ranges are 0-4, 5-24, 25-44, ... A message's index is assigned by ingest
and never reused, so each range is decided by exactly one message and a redelivery decides the same range.

Token trigger: the count boundaries above cut the conversation into *segments*. Inside a segment, when the
recorded token estimates (``MessageRecorded.tokens``) of the not yet summarized messages pass
``token_trigger``, the message that passes it closes a range early (summarized into about ``token_target``
tokens); the segment's count boundary then closes what is left. The decision reads only the segment's
recorded token counts in index order, so the same log always gives the same ranges (and ids).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mnemo.services.summarizer.settings import SummarizerSettings
from mnemo.shared.events.envelope import deterministic_id


@dataclass(frozen=True)
class SummaryRange:
    first_index: int
    last_index: int
    by_tokens: bool = False  # closed early by the token trigger (summarized into ``token_target``)

    def indexes(self) -> range:
        return range(self.first_index, self.last_index + 1)


def is_count_boundary(index: int, settings: SummarizerSettings) -> bool:
    """Whether the message at ``index`` is the last of a count segment (0-4, 5-24, ... by default)."""
    if index == settings.first_at - 1:
        return True
    return index >= settings.first_at and (index - settings.first_at + 1) % settings.every == 0


def segment_start(index: int, settings: SummarizerSettings) -> int:
    """First index of the count segment holding ``index``."""
    if index < settings.first_at:
        return 0
    return settings.first_at + (index - settings.first_at) // settings.every * settings.every


@dataclass(frozen=True)
class TriggerState:
    """Where the triggers stand after message ``index``: the first unsummarized index of its segment and the
    recorded tokens since then. A pure function of the log's recorded token counts (see :func:`advance`)."""

    index: int
    start: int
    used: int


def advance(
    state: TriggerState | None, index: int, tokens: int, settings: SummarizerSettings
) -> tuple[TriggerState, SummaryRange | None]:
    """Fold message ``index`` (recorded with ``tokens``) into ``state``, the state after message ``index - 1``
    (ignored, and may be None, when ``index`` starts a segment); returns the new state and the range the
    message closes, if any."""
    first = segment_start(index, settings)
    start, used = (first, 0) if state is None or index == first else (state.start, state.used)
    used += tokens
    if used > settings.token_trigger:
        return TriggerState(index, index + 1, 0), SummaryRange(start, index, by_tokens=True)
    if is_count_boundary(index, settings):
        return TriggerState(index, index + 1, 0), SummaryRange(start, index)
    return TriggerState(index, start, used), None


def fold_segment(
    index: int, settings: SummarizerSettings, segment_tokens: Sequence[int] | None = None
) -> tuple[TriggerState, SummaryRange | None]:
    """:func:`advance` over messages ``segment_start(index) .. index`` (``segment_tokens``, in index order;
    missing counts are 0)."""
    first = segment_start(index, settings)
    tokens = list(segment_tokens or ())
    tokens += [0] * (index - first + 1 - len(tokens))
    state, rng = advance(None, first, tokens[0], settings)
    for i in range(first + 1, index + 1):
        state, rng = advance(state, i, tokens[i - first], settings)
    return state, rng


def due_range(
    index: int, settings: SummarizerSettings, segment_tokens: Sequence[int] | None = None
) -> SummaryRange | None:
    """The range closed by the message at ``index``, or None if that message closes no range.

    ``segment_tokens``: the recorded token estimates of messages ``segment_start(index) .. index`` in index
    order; without them only the count trigger applies. Walking the segment from its start replays every
    earlier token-closed range, so the answer depends on the log alone.
    """
    return fold_segment(index, settings, segment_tokens)[1]


def summary_id(
    tenant_id: str,
    user_id: str,
    conversation_id: str,
    rng: SummaryRange,
    kind: str,
    character_id: str | None = None,
) -> str:
    """Deterministic: the same range (and character, for a per-character summary) always gives the same id,
    so redelivery appends nothing new."""
    parts = ["summary", tenant_id, user_id, conversation_id, kind, str(rng.first_index), str(rng.last_index)]
    if character_id is not None:
        parts += ["for", character_id]
    return deterministic_id(*parts)
