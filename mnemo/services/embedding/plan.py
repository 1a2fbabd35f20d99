"""What a batch of log events does to the vector index (pure): the :class:`Plan` every source adds to.

Each source of points (``messages``, ``summaries``, ``legacy``, ``lore``, ``facts``) plans its deletions and
points into one ``Plan``; the handler runs the deletions first, then embeds and upserts the points. The point
schema (kinds, payload keys, ids, filters) is ``mnemo/shared/vectors/points.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mnemo.shared.aggregates.conversation import as_utc
from mnemo.shared.events.envelope import EventEnvelope, EventType
from mnemo.shared.vectors.port import PayloadValue, VectorFilter

#: Cuts a text into the chunks that are embedded, one point each.
Chunker = Callable[[str], list[str]]


@dataclass(frozen=True)
class PendingPoint:
    """A chunk to embed and the point it becomes."""

    id: str
    text: str
    payload: dict[str, PayloadValue]


@dataclass
class Plan:
    deletions: list[VectorFilter] = field(default_factory=list)  # run before the upserts
    points: list[PendingPoint] = field(default_factory=list)


def epoch(value: datetime) -> float:
    """A payload time: epoch seconds (what ``Range`` filters compare)."""
    return as_utc(value).timestamp()


def of_type(envelopes: Iterable[EventEnvelope], event_type: EventType[Any]) -> list[EventEnvelope]:
    """The events of one type, in log order."""
    return [env for env in envelopes if env.type == event_type.name]
