"""The extractive summary (no LLM) of a range, and its ``summary.created`` payload (the summaries aggregate's
``span_summary``).

The range's messages are split into sentences (:mod:`mnemo.services.summarizer.sentences`), every sentence is
embedded, and the sentences closest to the centroid of all of them (cosine; with L2-normalised vectors this
ranks like the mean cosine to every other sentence, in O(n) instead of O(n^2)) are taken greedily while they
fit in ``max_tokens``. Near-duplicates of an already chosen sentence (cosine above ``duplicate_cosine``) are
skipped. Chosen sentences keep their original order and are prefixed with their author's name.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mnemo.services.summarizer.audience import RangeMessage, participants_of
from mnemo.services.summarizer.importance import importance
from mnemo.services.summarizer.sentences import Sentence
from mnemo.services.summarizer.settings import SummarizerSettings
from mnemo.services.summarizer.triggers import SummaryRange
from mnemo.shared.aggregates.summaries import Span, span_summary
from mnemo.shared.events.recorded import EVERYONE, Citation, SummaryCreated
from mnemo.shared.tokens import estimate_tokens


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
    return render_cited(messages, picked)[0]


def render_cited(messages: Sequence[RangeMessage], picked: Sequence[Sentence]) -> tuple[str, list[Citation]]:
    """:func:`render_summary`'s text and where each sentence in it came from (its message and its characters
    in the text), so the summary can cite the turns it carries."""
    text = ""
    citations: list[Citation] = []
    last_author: str | None = None
    for s in picked:
        msg = messages[s.message_pos]
        author = msg.author_name.strip() or msg.role
        if text:
            text += " "
        if author != last_author:
            text += f"{author}: "
            last_author = author
        citations.append(Citation(message_id=msg.message_id, start=len(text), end=len(text) + len(s.text)))
        text += s.text
    return text, citations


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
    text, citations = render_cited(messages, picked)
    span = Span(user_id, conversation_id, rng.first_index, rng.last_index)
    weight = importance(messages, people)
    return span_summary(
        summary_id,
        span,
        messages,
        people,
        audience,
        text=text,
        importance=weight,
        method="extractive",
        citations=citations,
    )
