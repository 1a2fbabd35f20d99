"""What the two Qdrant adapters (``edge.py``, in-process; ``qdrant_server.py``, a server through qdrant-client)
decide alike, written once: which payload index each field gets, how the port's filter becomes the engine's
(a rule with a trap: ``MatchAny`` takes only all-str or all-int lists), point ids and payloads.

Each adapter keeps only its binding's constructors: a :class:`FilterBuilder` of the engine's condition types
and the schema of each :data:`IndexKind`. The two bindings have the same concepts but no common types, so this
module speaks the port's language and the adapters translate the last step.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal, Protocol, TypeVar

from mnemo.shared.vectors.port import (
    FLOAT_FIELDS,
    INTEGER_FIELDS,
    KEYWORD_FIELDS,
    TENANT_FIELD,
    Match,
    PayloadValue,
    Range,
    VectorFilter,
)

#: The kind of payload index a field gets; ``tenant`` is the keyword index marked ``is_tenant`` (Qdrant keeps
#: a tenant's points together).
IndexKind = Literal["tenant", "keyword", "float", "integer"]

Condition = TypeVar("Condition")


def payload_indexes() -> dict[str, IndexKind]:
    """Every payload index the collection carries, by field (what the filters of every read path use)."""
    wanted: dict[str, IndexKind] = {TENANT_FIELD: "tenant"}
    wanted |= dict.fromkeys(KEYWORD_FIELDS, "keyword")
    wanted |= dict.fromkeys(FLOAT_FIELDS, "float")
    wanted |= dict.fromkeys(INTEGER_FIELDS, "integer")
    return wanted


class FilterBuilder(Protocol[Condition]):
    """The engine binding's constructors of filter conditions."""

    def equals(self, key: str, value: str | int) -> Condition: ...

    def any_of(self, key: str, values: list[str] | list[int]) -> Condition: ...

    def within(self, key: str, gte: float | None, lte: float | None) -> Condition: ...

    def one_of(self, conditions: list[Condition]) -> Condition:
        """A nested filter matching when any of ``conditions`` does."""
        ...


def translate(flt: VectorFilter, build: FilterBuilder[Condition]) -> tuple[list[Condition], list[Condition]] | None:
    """The port's filter as the engine's ``(must, must_not)`` conditions; ``None`` when it has none (it
    matches every point)."""
    if not flt.must and not flt.must_not:
        return None
    return [_condition(c, build) for c in flt.must], [_condition(c, build) for c in flt.must_not]


def _condition(cond: Match | Range, build: FilterBuilder[Condition]) -> Condition:
    if isinstance(cond, Range):
        return build.within(cond.key, cond.gte, cond.lte)
    values = cond.values  # non-empty and bool-free: Match validates itself
    if len(values) == 1:
        return build.equals(cond.key, values[0])
    strings = [v for v in values if isinstance(v, str)]
    if len(strings) == len(values):
        return build.any_of(cond.key, strings)
    integers = [v for v in values if isinstance(v, int)]
    if len(integers) == len(values):
        return build.any_of(cond.key, integers)
    # Mixed str and int values: MatchAny takes only all-str or all-int lists, so one match per value.
    return build.one_of([build.equals(cond.key, v) for v in values])


def point_id(text: str) -> str:
    """Canonical UUID text; rejects a non-UUID id here with a clear message instead of an engine error."""
    return str(uuid.UUID(text))


def payload_of(payload: dict[str, Any] | None) -> dict[str, PayloadValue]:
    """A hit's payload as the port's (the engines answer ``None`` for a point without one)."""
    return dict(payload) if payload else {}
