"""The ranking's per-text memo remembers short texts and never holds a long one (bounded memory per tenant)."""

from __future__ import annotations

from collections.abc import Callable

from mnemo.services.context_assembler.search.ranking import word_set
from mnemo.services.context_assembler.search.text_cache import MAX_CHARS, per_text
from mnemo.shared.sparse import tokens


def counting() -> tuple[list[str], Callable[[str], str]]:
    seen: list[str] = []

    @per_text(4)
    def upper(text: str) -> str:
        seen.append(text)
        return text.upper()

    return seen, upper


def test_a_short_text_is_derived_once() -> None:
    seen, upper = counting()
    assert upper("kate") == upper("kate") == "KATE"
    assert seen == ["kate"]


def test_a_text_longer_than_the_bound_is_derived_each_time() -> None:
    seen, upper = counting()
    long = "x" * (MAX_CHARS + 1)
    assert upper(long) == upper(long) == long.upper()
    assert seen == [long, long]


def test_a_long_texts_word_set_is_still_its_words() -> None:
    long = "the cats sat on the mats " * (MAX_CHARS // 10)
    assert len(long) > MAX_CHARS
    assert word_set(long) == frozenset(tokens(long)) == word_set("the cats sat on the mats")
