"""A range's messages as sentences, the unit the extractive summary picks from."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from mnemo.services.summarizer.audience import RangeMessage


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
