"""The all-source memory listing: which sources a request reads, and pages of the merged view that neither
skip nor repeat, whatever the page size, with ties on ``end_at`` broken by id."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.services.memory.listing import Sources, merge_page, order_key, sources_for
from mnemo_client.wire.memory_contract import MemoryItem, MemoryListRequest

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def req(**over: Any) -> MemoryListRequest:
    return MemoryListRequest.model_validate({"tenant_id": "t", "user_id": "u"} | over)


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        ({}, Sources(summaries=True, legacy=True, knowledge=True)),
        ({"source": "memory"}, Sources(summaries=True, legacy=True, knowledge=False)),
        ({"source": "knowledge"}, Sources(summaries=False, legacy=False, knowledge=True)),
        ({"type": "short_term"}, Sources(summaries=True, legacy=False, knowledge=False)),
        ({"type": "legacy_memory"}, Sources(summaries=False, legacy=True, knowledge=False)),
        ({"type": "semantic"}, Sources(summaries=False, legacy=False, knowledge=True)),
        ({"type": "semantic", "source": "memory"}, Sources(summaries=False, legacy=False, knowledge=False)),
        ({"converted_to_lore": True}, Sources(summaries=True, legacy=False, knowledge=False)),
        ({"converted_to_lore": False, "source": "knowledge"}, Sources(summaries=False, legacy=False, knowledge=False)),
    ],
)
def test_sources_follow_source_type_and_converted_filters(over: dict[str, Any], expected: Sources) -> None:
    assert sources_for(req(**over)) == expected


def item(source: str, id_: str, minutes: int | None) -> MemoryItem:
    end = None if minutes is None else T0 + timedelta(minutes=minutes)
    return MemoryItem.model_validate({"source": source, "id": id_, "type": "x", "text": "", "end_at": end})


def test_newest_first_then_id_and_undated_last() -> None:
    items = [item("memory", "b", 5), item("knowledge", "a", 5), item("memory", "c", 9), item("knowledge", "z", None)]
    assert [i.id for i in sorted(items, key=order_key)] == ["c", "a", "b", "z"]


SOURCES = ("memory", "legacy_lore", "knowledge")
lists = st.lists(st.tuples(st.sampled_from(SOURCES), st.one_of(st.none(), st.integers(0, 6))), max_size=30).map(
    lambda rows: [item(src, f"{src}-{n}", minutes) for n, (src, minutes) in enumerate(rows)]
)


@given(lists, st.integers(1, 9))
def test_pages_of_the_merged_view_cover_it_exactly_once(items: list[MemoryItem], limit: int) -> None:
    """Each source offers only the prefix a page can need (``offset + limit`` items, as the service asks),
    yet the pages concatenate to the whole view in order."""
    by_source = {s: sorted((i for i in items if i.source == s), key=order_key) for s in SOURCES}
    pages: list[MemoryItem] = []
    for offset in range(0, len(items) + limit, limit):
        prefixes = [rows[: offset + limit] for rows in by_source.values()]
        pages += merge_page(prefixes, offset, limit)
    assert pages == sorted(items, key=order_key)


def test_a_page_past_the_end_is_empty() -> None:
    assert merge_page([[item("memory", "a", 1)], []], offset=5, limit=3) == []
