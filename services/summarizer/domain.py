"""Pure summarizer logic: when a conversation is due a summary, who may see it, and the extractive summary.

Count trigger: the first summary covers messages ``0 .. first_at-1`` and is due when the message with index
``first_at-1`` is recorded; after that one summary per ``every`` messages (``first_at .. first_at+every-1``,
...). With the defaults (5, 20) the ranges are 0-4, 5-24, 25-44, ... A message's index is assigned by ingest
and never reused, so each range is decided by exactly one message and a redelivery decides the same range.

Token trigger: the count boundaries above cut the conversation into *segments*. Inside a segment, when the
recorded token estimates (``MessageRecorded.tokens``) of the not yet summarized messages pass
``token_trigger``, the message that passes it closes a range early (summarized into about ``token_target``
tokens); the segment's count boundary then closes what is left. The decision reads only the segment's
recorded token counts in index order, so the same log always gives the same ranges (and ids).

Presence (the "hive mind" rule): a message is witnessed by the bots in its ``bot_ids`` and by its
``persona_id``. A range's main summary is for the characters present in *every* message of the range;
each character present in only some of them gets its own summary of just the messages it witnessed
(:func:`presence_parts`). Missing information restricts nothing, per kind of character: a message with no
``bot_ids`` is one every bot may be shown (``shared/presence.py``, the rule the context-assembler applies to
the messages themselves), and one with no ``persona_id`` restricts no persona.

Extractive summary (no LLM): the range's messages are split into sentences, every sentence is embedded, and
the sentences closest to the centroid of all of them (cosine; with L2-normalised vectors this ranks like the
mean cosine to every other sentence, in O(n) instead of O(n^2)) are taken greedily while they fit in
``max_tokens``. Near-duplicates of an already chosen sentence (cosine above ``duplicate_cosine``) are
skipped. Chosen sentences keep their original order and are prefixed with their author's name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from services.summarizer.settings import SummarizerSettings
from shared.events.envelope import deterministic_id
from shared.events.recorded import EVERYONE, SummaryCreated
from shared.tokens import estimate_tokens


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


@dataclass(frozen=True)
class RangeMessage:
    message_id: str
    index: int
    role: str
    author_name: str
    content: str
    created_at: datetime
    bot_ids: tuple[str, ...] = ()
    persona_id: str | None = None

    @property
    def witnesses(self) -> tuple[str, ...]:
        """The characters named present: the bots in the scene and the persona used."""
        return (*self.bot_ids, self.persona_id) if self.persona_id else self.bot_ids

    def seen_by_bot(self, bot_id: str) -> bool:
        """``bot_id`` was in the scene, or the message names no bot (no scene information)."""
        return not self.bot_ids or bot_id in self.bot_ids

    def seen_by_persona(self, persona_id: str) -> bool:
        """``persona_id`` was used, or the message names no persona."""
        return self.persona_id is None or self.persona_id == persona_id


@dataclass(frozen=True)
class AudiencePart:
    """One summary to write for a range: its messages and the characters who may be shown it.

    ``character_id`` is None for the range's main summary (all its messages), else the one character
    present in only some of the messages, whose summary covers exactly the messages it witnessed.
    """

    audience: tuple[str, ...]
    messages: tuple[RangeMessage, ...]
    character_id: str | None = None


def presence_parts(messages: Sequence[RangeMessage]) -> list[AudiencePart]:
    """The summaries a range needs so that no summary tells a character what it did not witness.

    - No message names a bot: one summary, audience ``["*"]``: every bot may be shown each of these messages,
      so every bot may be shown their summary (personas are not told apart without scene information).
    - Otherwise the main summary's audience is the bots, then the personas, that saw every message (see
      :meth:`RangeMessage.seen_by_bot` / :meth:`~RangeMessage.seen_by_persona`), and every character that saw
      only some of them gets a summary of exactly those. When nobody saw them all there is no main summary:
      an empty audience would read as "no presence information" to some readers, so it is never written.
    Characters are in order of first appearance (bots first), so the result is deterministic.
    """
    if not any(m.bot_ids for m in messages):
        return [AudiencePart((EVERYONE,), tuple(messages))]
    bots = list(dict.fromkeys(b for m in messages for b in m.bot_ids))
    personas = list(dict.fromkeys(m.persona_id for m in messages if m.persona_id))
    saw: dict[str, tuple[RangeMessage, ...]] = {
        **{b: tuple(m for m in messages if m.seen_by_bot(b)) for b in bots},
        **{p: tuple(m for m in messages if m.seen_by_persona(p)) for p in personas},
    }
    common = tuple(c for c, seen in saw.items() if len(seen) == len(messages))
    parts = [AudiencePart(common, tuple(messages))] if common else []
    parts += [AudiencePart((c,), seen, c) for c, seen in saw.items() if c not in common]
    return parts


@dataclass(frozen=True)
class Sentence:
    message_pos: int  # position of its message in the range
    order: int  # global position, to restore the original order
    text: str


_SPLIT = re.compile(r"(?<=[.!?…])\s+|(?<=[.!?…][\"'”’)\]])\s+|\n+")


def split_sentences(text: str) -> list[str]:
    """Sentences on ``.``, ``!``, ``?``, ``…`` followed by space, and on line breaks; blanks dropped."""
    return [s.strip() for s in _SPLIT.split(text) if s and s.strip()]


def sentences_of(messages: Sequence[RangeMessage], limit: int) -> list[Sentence]:
    """The messages' sentences in order; over ``limit``, ``limit`` of them spread evenly over the whole span
    (a long range, or a recomputed consolidation, is then sampled from start to end, not cut after its
    beginning)."""
    every = [(pos, text) for pos, msg in enumerate(messages) for text in split_sentences(msg.content)]
    if len(every) > limit:
        every = [every[k * len(every) // limit] for k in range(limit)]
    return [Sentence(pos, order, text) for order, (pos, text) in enumerate(every)]


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _normalise(v: Sequence[float]) -> list[float]:
    norm = math.sqrt(_dot(v, v))
    return [x / norm for x in v] if norm > 0 else list(v)


def centrality(vectors: Sequence[Sequence[float]]) -> list[float]:
    """Cosine of each vector to the centroid of all of them."""
    if not vectors:
        return []
    unit = [_normalise(v) for v in vectors]
    dims = len(unit[0])
    centroid = _normalise([sum(v[d] for v in unit) / len(unit) for d in range(dims)])
    return [_dot(v, centroid) for v in unit]


def pick_central(
    sentences: Sequence[Sentence],
    vectors: Sequence[Sequence[float]],
    *,
    max_tokens: int,
    duplicate_cosine: float,
    min_relative: float = 0.0,
) -> list[Sentence]:
    """The most central sentences that fit ``max_tokens`` (estimated per sentence), in original order.

    Skipping a sentence that does not fit lets a shorter one take the room left, so off-topic filler
    ("Did you eat breakfast?") could sneak in: sentences scoring below ``min_relative`` times the best
    score are never taken. If nothing fits, the most central sentence is taken whole, so a summary is
    never empty.
    """
    scores = centrality(vectors)
    unit = [_normalise(v) for v in vectors]
    ranked = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))
    chosen: list[int] = []
    used = 0
    floor = min_relative * scores[ranked[0]] if ranked else 0.0
    for i in ranked:
        if scores[i] < floor:
            break
        cost = estimate_tokens(sentences[i].text)
        if used + cost > max_tokens:
            continue
        if any(_dot(unit[i], unit[j]) > duplicate_cosine for j in chosen):
            continue
        chosen.append(i)
        used += cost
    if not chosen and ranked:
        chosen = [ranked[0]]
    return [sentences[i] for i in sorted(chosen, key=lambda i: sentences[i].order)]


def render_summary(messages: Sequence[RangeMessage], picked: Sequence[Sentence]) -> str:
    """``Name: sentence sentence`` per run of consecutive picked sentences of the same author."""
    parts: list[str] = []
    last_author: str | None = None
    for s in picked:
        msg = messages[s.message_pos]
        author = msg.author_name.strip() or msg.role
        if author == last_author:
            parts[-1] += " " + s.text
        else:
            parts.append(f"{author}: {s.text}")
            last_author = author
    return " ".join(parts)


# Words that usually mark plot-relevant turns in roleplay and chat (promises, secrets, loss, conflict).
SIGNIFICANT = frozenset(
    [
        "die",
        "died",
        "dead",
        "death",
        "kill",
        "killed",
        "murder",
        "love",
        "loved",
        "hate",
        "secret",
        "secrets",
        "promise",
        "promised",
        "swear",
        "betray",
        "betrayed",
        "marry",
        "married",
        "wedding",
        "war",
        "battle",
        "attack",
        "escape",
        "fled",
        "rescue",
        "born",
        "pregnant",
        "remember",
        "forget",
        "never",
        "always",
        "forever",
        "truth",
        "lie",
        "lied",
        "confess",
        "confessed",
        "stolen",
        "steal",
        "treasure",
        "curse",
        "cursed",
        "prophecy",
        "king",
        "queen",
        "crown",
        "blood",
        "poison",
        "wound",
        "wounded",
    ]
)
_WORD = re.compile(r"[a-zA-Z']+")


def importance(messages: Sequence[RangeMessage], participants: Sequence[str]) -> int:
    """1-10, a documented heuristic (no LLM), higher for ranges likely to matter later.

    Start at 3; +1 for one distinct significant word (:data:`SIGNIFICANT`), +2 for three or more, +3 for
    six or more; +1 for at least two exclamation marks (heightened emotion); +1 for three or more
    participants; +1 when messages average 40+ estimated tokens (substantive writing rather than
    small talk); clamped to 1..10.
    """
    words = {w.lower() for m in messages for w in _WORD.findall(m.content)}
    hits = len(words & SIGNIFICANT)
    score = 3 + (3 if hits >= 6 else 2 if hits >= 3 else 1 if hits else 0)
    if sum(m.content.count("!") for m in messages) >= 2:
        score += 1
    if len(participants) >= 3:
        score += 1
    if messages and sum(estimate_tokens(m.content) for m in messages) / len(messages) >= 40:
        score += 1
    return max(1, min(10, score))


def participants_of(messages: Sequence[RangeMessage]) -> list[str]:
    """Bots present and personas used in the range, in order of first appearance, without repeats."""
    seen: dict[str, None] = {}
    for m in messages:
        for b in m.bot_ids:
            seen.setdefault(b, None)
        if m.persona_id:
            seen.setdefault(m.persona_id, None)
    return list(seen)


def compose_summary(
    *,
    summary_id: str,
    user_id: str,
    conversation_id: str,
    rng: SummaryRange,
    messages: Sequence[RangeMessage],
    sentences: Sequence[Sentence],
    vectors: Sequence[Sequence[float]],
    settings: SummarizerSettings,
    audience: Sequence[str] = (EVERYONE,),
    max_tokens: int | None = None,
) -> SummaryCreated:
    """The ``summary.created`` payload of a range (``messages`` sorted by index, non-empty); ``max_tokens``
    defaults to ``settings.max_tokens``."""
    picked = pick_central(
        sentences,
        vectors,
        max_tokens=max_tokens or settings.max_tokens,
        duplicate_cosine=settings.duplicate_cosine,
        min_relative=settings.min_relative_centrality,
    )
    people = participants_of(messages)
    return SummaryCreated(
        summary_id=summary_id,
        user_id=user_id,
        conversation_id=conversation_id,
        summary_type="short_term",
        text=render_summary(messages, picked),
        importance=importance(messages, people),
        participants=people,
        start_at=min(m.created_at for m in messages),
        end_at=max(m.created_at for m in messages),
        message_ids=[m.message_id for m in messages],
        first_index=rng.first_index,
        last_index=rng.last_index,
        method="extractive",
        audience=list(audience),
    )
