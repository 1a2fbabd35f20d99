"""Hypothesis: activation is deterministic for a fixed seed and never spends more than the budget, except on
entries that ignore it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.context_assembler.unit.activation_helpers import book, scan

WORDS = ["dragon", "sword", "elf", "king", "fire", "塔罗牌", "old man", "the"]

entry_st = st.fixed_dictionaries(
    {
        "key": st.lists(st.sampled_from(WORDS), max_size=3),
        "content": st.lists(st.sampled_from(WORDS), min_size=1, max_size=60).map(" ".join),
        "constant": st.booleans(),
        "order": st.integers(0, 5),
        "probability": st.sampled_from([0, 30, 100]),
        "ignoreBudget": st.booleans(),
        "group": st.sampled_from(["", "g", "h", "g,h"]),
        "preventRecursion": st.booleans(),
        "delayUntilRecursion": st.sampled_from([0, 0, 1, 2]),
    }
)
messages_st = st.lists(st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join), min_size=1, max_size=6)


@settings(max_examples=150, deadline=None)
@given(entries=st.lists(entry_st, max_size=12), messages=messages_st, seed=st.text(max_size=8))
def test_deterministic_for_a_fixed_seed(entries, messages, seed) -> None:
    lore = book(*entries)
    first = scan(lore, messages, seed=seed, max_context=800)
    second = scan(lore, messages, seed=seed, max_context=800)
    assert [(e.ident, e.why) for e in first.entries] == [(e.ident, e.why) for e in second.entries]
    assert first.placements == second.placements


@settings(max_examples=150, deadline=None)
@given(entries=st.lists(entry_st, max_size=12), messages=messages_st, context=st.integers(10, 2000))
def test_budget_never_exceeded_except_by_entries_that_ignore_it(entries, messages, context) -> None:
    result = scan(book(*entries), messages, max_context=context)
    spent = sum(e.tokens for e in result.entries if not e.entry.ignore_budget)
    assert spent < result.budget
