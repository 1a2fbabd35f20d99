"""Pure: the text of a consolidation, the children's sentences it keeps and where each came from (the
summarizer's own part; which summaries fold, their payload and their retirement are the summaries
aggregate's, ``mnemo.shared.aggregates.summaries``).
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.services.summarizer.domain import Sentence, split_sentences
from mnemo.shared.aggregates.summaries import oldest_first
from mnemo.shared.events.recorded import Citation, SummaryCreated


def child_sentences(children: Sequence[SummaryCreated], limit: int) -> list[Sentence]:
    """The children's sentences in child order (oldest first), for an extractive consolidation."""
    out: list[Sentence] = []
    for pos, child in enumerate(sorted(children, key=oldest_first)):
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
    ordered = sorted(children, key=oldest_first)
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
