"""Every payload field a vector query filters on has an index in both adapters' schema (issue 26): without one,
the engine reads the payload of every point the other conditions leave to test it."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterator
from typing import Any

from mnemo.services.context_assembler.search import filters
from mnemo.shared.vectors import points
from mnemo.shared.vectors.port import (
    FLOAT_FIELDS,
    INTEGER_FIELDS,
    KEYWORD_FIELDS,
    TENANT_FIELD,
    Match,
    Range,
    VectorFilter,
)
from mnemo_client.wire.contract import ContextAssembleRequest

INDEXED = {TENANT_FIELD, *KEYWORD_FIELDS, *INTEGER_FIELDS, *FLOAT_FIELDS}


def _argument(annotation: Any) -> Any:
    text = str(annotation)
    if "int" in text and "Iterable" in text:
        return [1]
    if "Iterable" in text or "Sequence" in text:
        return ["x"]
    return 1 if text == "int" else "x"


def _filters_of(module: Any) -> Iterator[tuple[str, VectorFilter]]:
    """Each public function of ``module`` that returns a filter, called with placeholder arguments."""
    for name, fn in inspect.getmembers(module, inspect.isfunction):
        if fn.__module__ != module.__name__ or name.startswith("_"):
            continue
        hints = typing.get_type_hints(fn)
        if hints.get("return") is not VectorFilter:
            continue
        args = {p: _argument(hints[p]) for p in inspect.signature(fn).parameters if p in hints}
        yield name, fn(**args)


def _fields(flt: VectorFilter) -> set[str]:
    return {c.key for c in (*flt.must, *flt.must_not) if isinstance(c, Match | Range)}


def test_every_field_the_point_schemas_filters_use_is_indexed() -> None:
    found = dict(_filters_of(points))
    assert {"witnessed_messages", "lore_books", "lore_entries_by_uid", "document_chunks"} <= set(found)
    for name, flt in found.items():
        assert _fields(flt) <= INDEXED, f"{name} filters on {_fields(flt) - INDEXED} with no payload index"


def test_every_field_a_context_request_filters_on_is_indexed() -> None:
    req = ContextAssembleRequest(
        tenant_id="t", user_id="u", conversation_id="c", bot_id="b", persona_id="p", campaign_id="k",
        user_message="what did we do on 29 December 2023?",
    )  # fmt: skip
    made: list[Callable[[], VectorFilter | None]] = [
        lambda: filters.messages_filter(req, ["m1"]),
        lambda: filters.memories_filter(req, ["other-branch"]),
        lambda: filters.legacy_filter(req),
        lambda: filters.facts_filter(req),
        lambda: filters.dated_filter(filters.messages_filter(req), req.user_message, 1.8e9),
    ]
    for make in made:
        flt = make()
        assert flt is not None
        assert _fields(flt) <= INDEXED, f"{_fields(flt) - INDEXED} filtered with no payload index"
    # The dense re-read of the taken ids (search/searches.py, VectorSearch._hybrid) matches on these.
    assert {points.SUMMARY_ID, points.LEGACY_ID, points.FACT_ID} <= INDEXED
