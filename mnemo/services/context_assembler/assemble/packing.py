"""Budget-aware packing, pure: which offered items go into the context, by expected usefulness per token.

Two tiers (:func:`pack`):

- ``reserved``: what is placed before anything competes (constant lore, the newest history messages...), in
  the order given, each if it still fits. A ``chain`` ties offers that must stay contiguous (the newest
  history run): once one of a chain is left out, the rest of that chain is not offered.
- ``competing``: everything scored against the request (memories, knowledge, legacy memories, retrieved
  messages), offered best **density** first: its value (expected usefulness in [0, 1], the retrieval's own
  score) per token of its line. An item that does not fit is skipped and smaller ones after it may still fit:
  the greedy approximation of the 0/1 knapsack, which keeps the reply short of evidence only by the room an
  item too big to fit leaves unused. So a short relevant fact beats a long summary of middling relevance,
  and an irrelevant section no longer takes its share first (SmartSearch, arXiv 2603.15599: packing, not
  recall, is what loses the evidence within a budget).

Whether an offer fits is the caller's ``fits`` (the assembler re-renders the section and counts it: headers
and the tokenizer make counts non-additive); :class:`Room` is the additive one (tests, offline benchmarks).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Offer(Generic[T]):
    """An item offered to the budget: the draft ``slot`` it goes to, its ``value`` in [0, 1] (clamped) and
    its ``cost`` in tokens (its rendered line)."""

    slot: str
    item: T
    value: float
    cost: int
    chain: str | None = None

    @property
    def density(self) -> float:
        # A zero-cost line still counts one token, so density stays finite and ordered by value.
        return min(1.0, max(0.0, self.value)) / max(1, self.cost)


@dataclass
class Packed(Generic[T]):
    """What went in (reserved first, in order, then competing in the order taken) and the reserved offers
    that did not (the caller names those that must not vanish silently)."""

    kept: list[Offer[T]] = field(default_factory=list)
    missing: list[Offer[T]] = field(default_factory=list)


def by_density(offers: Sequence[Offer[T]]) -> list[Offer[T]]:
    """Best density first; ties by higher value, then the order given (so equal items keep their order)."""
    return [o for _, o in sorted(enumerate(offers), key=lambda io: (-io[1].density, -io[1].value, io[0]))]


def pack(reserved: Sequence[Offer[T]], competing: Sequence[Offer[T]], fits: Callable[[Offer[T]], bool]) -> Packed[T]:
    """Reserved offers in order (a chain stops at its first miss), then competing ones by :func:`by_density`.
    ``fits`` is asked once per offer and keeps the offer when it says True."""
    out: Packed[T] = Packed()
    broken: set[str] = set()
    for offer in reserved:
        if offer.chain is not None and offer.chain in broken:
            out.missing.append(offer)
        elif fits(offer):
            out.kept.append(offer)
        else:
            out.missing.append(offer)
            if offer.chain is not None:
                broken.add(offer.chain)
    out.kept += [offer for offer in by_density(competing) if fits(offer)]
    return out


class Room:
    """An additive budget: an offer fits when its cost does not take the total past ``budget``."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0

    def __call__(self, offer: Offer[Any]) -> bool:
        if self.used + offer.cost > self.budget:
            return False
        self.used += offer.cost
        return True
