"""Count and token triggers: deterministic ranges decided from the log's recorded token counts alone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from mnemo.services.summarizer import llm_summary
from mnemo.services.summarizer.domain import (
    RangeMessage,
    SummaryRange,
    advance,
    due_range,
    fold_segment,
    segment_start,
)
from mnemo.services.summarizer.settings import SECTION, SummarizerSettings
from mnemo.shared.settings import read_section

DEFAULTS = SummarizerSettings()


def ranges_of(tokens: list[int], s: SummarizerSettings) -> list[SummaryRange]:
    """Every range the log decides, message by message, as the handler would."""
    out = []
    for i in range(len(tokens)):
        first = segment_start(i, s)
        if (r := due_range(i, s, tokens[first : i + 1])) is not None:
            out.append(r)
    return out


def test_token_defaults():
    assert (DEFAULTS.token_trigger, DEFAULTS.token_target) == (10_000, 500)
    assert (DEFAULTS.max_active, DEFAULTS.consolidate_batch) == (8, 4)


def test_segments_follow_the_count_trigger():
    assert [segment_start(i, DEFAULTS) for i in (0, 4, 5, 24, 25, 44, 45)] == [0, 0, 5, 5, 25, 25, 45]


def test_small_messages_leave_the_count_trigger_alone():
    rs = ranges_of([100] * 65, DEFAULTS)
    assert rs == [SummaryRange(0, 4), SummaryRange(5, 24), SummaryRange(25, 44), SummaryRange(45, 64)]


def test_long_messages_close_a_range_early_and_the_count_boundary_closes_the_rest():
    tokens = [100] * 5 + [3_000] * 18 + [100] * 2  # segment 5-24: 10,000 passed at every 4th long message
    rs = ranges_of(tokens, DEFAULTS)
    assert rs == [
        SummaryRange(0, 4),
        SummaryRange(5, 8, by_tokens=True),
        SummaryRange(9, 12, by_tokens=True),
        SummaryRange(13, 16, by_tokens=True),
        SummaryRange(17, 20, by_tokens=True),
        SummaryRange(21, 24),  # the count boundary takes what is left
    ]


def test_one_huge_message_is_a_range_of_its_own():
    tokens = [10, 10, 20_000, 10, 10]
    assert ranges_of(tokens, DEFAULTS) == [SummaryRange(0, 2, by_tokens=True), SummaryRange(3, 4)]


def test_without_token_counts_only_the_count_trigger_applies():
    assert due_range(4, DEFAULTS) == SummaryRange(0, 4)
    assert due_range(8, DEFAULTS) is None


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 4_000), min_size=1, max_size=120),
    st.integers(1, 6),
    st.integers(1, 25),
    st.integers(500, 12_000),
)
def test_property_ranges_tile_the_log_and_respect_both_triggers(tokens, first_at, every, trigger):
    s = SummarizerSettings(first_at=first_at, every=every, token_trigger=trigger)
    rs = ranges_of(tokens, s)
    covered = [i for r in rs for i in r.indexes()]
    assert covered == list(range(len(covered))), "consecutive, no gap, no overlap"
    for r in rs:
        total = sum(tokens[r.first_index : r.last_index + 1])
        if r.by_tokens:
            assert total > trigger
            assert sum(tokens[r.first_index : r.last_index]) <= trigger, "closed by the first message passing it"
        assert segment_start(r.first_index, s) == segment_start(r.last_index, s), "never crosses a count boundary"
    assert rs == ranges_of(tokens, s), "same log, same ranges"


def test_per_tenant_overrides():
    s = SummarizerSettings(tenants={"t1": {"every": 10, "token_trigger": 2_000}})
    t1 = s.for_tenant("t1")
    assert (t1.every, t1.token_trigger, t1.first_at) == (10, 2_000, 5)
    assert s.for_tenant("t2") is s
    with pytest.raises(ValidationError):
        SummarizerSettings(tenants={"t1": {"every": 0}}).for_tenant("t1")


def test_per_tenant_overrides_from_the_environment(monkeypatch):
    monkeypatch.setenv("MNEMO_SUMMARIZER__TENANTS", '{"t1": {"every": 10}}')
    monkeypatch.setenv("MNEMO_SUMMARIZER__TOKEN_TRIGGER", "4000")
    s = read_section(SECTION, SummarizerSettings)
    assert s.token_trigger == 4_000
    assert s.for_tenant("t1").every == 10
    assert s.for_tenant("t1").token_trigger == 4_000


def test_a_batch_larger_than_the_bound_allows_is_refused():
    with pytest.raises(ValidationError):
        SummarizerSettings(max_active=3, consolidate_batch=5)


def test_a_token_triggered_range_asks_the_llm_for_its_target_length():
    messages = [RangeMessage("m0", 0, "user", "Ana", "We sailed east.", datetime(2026, 3, 1, tzinfo=UTC))]
    short = llm_summary.summary_ask(messages)
    assert short.prompt_version == "summarize.v1"
    assert "About 120 words" in short.messages[0].content
    long = llm_summary.summary_ask(messages, target_tokens=500)
    assert long.prompt_version == "summarize_long.v1"
    assert "About 375 words" in long.messages[0].content
    assert "Ana: We sailed east." in long.messages[0].content


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4_000), min_size=1, max_size=80), st.integers(1, 6), st.integers(1, 25))
def test_property_stepping_message_by_message_matches_folding_the_segment(tokens, first_at, every):
    """The handler's memo (advance from the previous message's state) decides what a cold read decides."""
    s = SummarizerSettings(first_at=first_at, every=every, token_trigger=5_000)
    state = None
    for i, t in enumerate(tokens):
        state, rng = advance(state, i, t, s)
        first = segment_start(i, s)
        assert (state, rng) == fold_segment(i, s, tokens[first : i + 1])
