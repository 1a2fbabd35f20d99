"""Chunking: budgets, boundaries, coverage and determinism (examples and Hypothesis properties)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.services.embedding.chunking import Chunk, chunk_text
from mnemo.shared.tokens import estimate_tokens


def test_short_text_is_one_verbatim_chunk() -> None:
    text = "  Hello there.\n\nHow are you?  "
    assert chunk_text(text) == [Chunk(text, 0, 0, len(text))]


def test_empty_and_blank_text_give_no_chunks() -> None:
    assert chunk_text("") == []
    assert chunk_text(" \n\t ") == []


def test_bad_budgets_are_refused() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        chunk_text("x", max_tokens=1)
    with pytest.raises(ValueError, match="overlap"):
        chunk_text("x", max_tokens=10, overlap_tokens=10)


def test_paragraphs_are_kept_whole_when_they_fit() -> None:
    paragraphs = [f"Paragraph {i} " + " ".join(f"w{i}x{j}" for j in range(30)) + "." for i in range(6)]
    text = "\n\n".join(paragraphs)
    chunks = chunk_text(text, max_tokens=100, overlap_tokens=0)
    assert len(chunks) > 1
    for chunk in chunks:
        assert estimate_tokens(chunk.text) <= 100
        assert chunk.text.endswith(".")  # cut at a paragraph (or sentence) end, not mid-sentence
    assert "".join(c.text + "\n\n" for c in chunks).strip() == text


def test_sentences_are_the_next_boundary() -> None:
    sentences = [f"Sentence number {i} says something about topic {i}." for i in range(40)]
    chunks = chunk_text(" ".join(sentences), max_tokens=60, overlap_tokens=0)
    assert len(chunks) > 2
    assert all(c.text.endswith(".") for c in chunks)


def test_text_without_breaks_uses_a_word_window_with_overlap() -> None:
    text = " ".join(f"word{i}" for i in range(400))
    chunks = chunk_text(text, max_tokens=50, overlap_tokens=10)
    assert len(chunks) > 5
    for prev, nxt in itertools.pairwise(chunks):
        assert nxt.start_char < prev.end_char  # overlapping
        overlap = text[nxt.start_char : prev.end_char]
        assert 0 < estimate_tokens(overlap) <= 10


def test_unbroken_text_is_split_between_characters() -> None:
    text = "記憶" * 600 + " https://example.com/" + "a" * 3000
    chunks = chunk_text(text, max_tokens=256, overlap_tokens=32)
    assert all(estimate_tokens(c.text) <= 256 for c in chunks)
    assert chunks[0].start_char == 0
    assert chunks[-1].end_char == len(text)


def test_default_budget_is_the_model_window() -> None:
    text = "This is a sentence about memory. " * 200
    chunks = chunk_text(text)
    assert len(chunks) > 1
    assert all(estimate_tokens(c.text) <= 256 for c in chunks)
    assert [c.index for c in chunks] == list(range(len(chunks)))


words = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Z", "C")), min_size=1, max_size=12),
    st.sampled_from(["end.", "why?", "yes!", "記憶。", "x" * 80]),
)
separators = st.sampled_from([" ", " ", " ", "\n", "\n\n", "  \n \n", "\t"])
texts = st.lists(st.tuples(words, separators), max_size=300).map(lambda ps: "".join(w + s for w, s in ps))


@settings(max_examples=300, deadline=None)
@given(texts, st.integers(2, 120), st.integers(0, 60))
def test_chunks_cover_the_text_within_budget_in_order(text: str, max_tokens: int, overlap: int) -> None:
    overlap = min(overlap, max_tokens - 1)
    chunks = chunk_text(text, max_tokens=max_tokens, overlap_tokens=overlap)
    assert chunks == chunk_text(text, max_tokens=max_tokens, overlap_tokens=overlap)  # deterministic
    if not text.strip():
        assert chunks == []
        return
    covered = [False] * len(text)
    for i, chunk in enumerate(chunks):
        assert chunk.index == i
        assert chunk.text == text[chunk.start_char : chunk.end_char]
        assert estimate_tokens(chunk.text) <= max_tokens
        for pos in range(chunk.start_char, chunk.end_char):
            covered[pos] = True
    assert all(covered[i] or ch.isspace() for i, ch in enumerate(text))
    starts = [c.start_char for c in chunks]
    ends = [c.end_char for c in chunks]
    assert starts == sorted(set(starts))
    assert ends == sorted(set(ends))
