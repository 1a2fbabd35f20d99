"""A memory's short title derived from its text (``mnemo/shared/titles.py``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mnemo.shared.titles import MAX_CHARS, MAX_WORDS, short_title


def test_the_title_is_the_first_sentence_cut_to_a_few_words():
    assert short_title("Ana hid the letter. Then she left.") == "Ana hid the letter"
    assert short_title("The envoy of the choir came to the chapel at dawn with a sealed letter") == (
        "The envoy of the choir came to the…"
    )
    assert short_title("   ") == "Untitled"
    assert short_title("Line one\nline two") == "Line one"


@given(st.text(max_size=500))
def test_a_title_is_short_whatever_the_text(text):
    title = short_title(text)
    assert title
    assert len(title) <= MAX_CHARS + 1
    assert len(title.split()) <= MAX_WORDS
