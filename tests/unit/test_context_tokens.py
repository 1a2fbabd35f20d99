"""Token counting for the context budget: the estimator by default, a tokenizer.json when one is named."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer

from mnemo.shared.embedders.bundled import tokenizer_path
from mnemo.shared.tokens import EstimatedTokens, HfTokenizerTokens, estimate_tokens, token_counter


def test_no_tokenizer_named_means_the_estimator():
    counter = token_counter(None)
    assert isinstance(counter, EstimatedTokens)
    assert counter.count("The storm wall grows darker.") == estimate_tokens("The storm wall grows darker.")
    assert counter.count("") == 0


def test_a_tokenizer_file_counts_exactly_without_special_tokens_or_truncation():
    path = tokenizer_path()  # the bundled model's tokenizer.json stands in for an LLM's
    counter = token_counter(path)
    assert isinstance(counter, HfTokenizerTokens)
    text = "The storm wall over the northern sea grows darker by the hour. " * 40
    raw = Tokenizer.from_file(str(path))
    raw.no_truncation()
    expected = len(raw.encode(text, add_special_tokens=False).ids)
    assert counter.count(text) == expected
    assert counter.count(text) > 128, "the file's own truncation (128) is switched off"
    assert counter.count("") == 0


def test_a_named_tokenizer_that_is_missing_fails_at_start(tmp_path: Path):
    with pytest.raises(Exception, match=r"No such file|os error"):
        token_counter(tmp_path / "missing.json")


def test_the_estimator_takes_the_largest_of_characters_words_and_wide_characters():
    assert estimate_tokens("abcdefgh") == 2  # 8 characters / 4
    assert estimate_tokens("a b c d e f") == 8  # 6 words * 4 / 3
    assert estimate_tokens("漢字漢字漢字") == 6  # one per CJK character
    assert estimate_tokens("é" * 8) == 2, "accented Latin is not wide"
    assert estimate_tokens("😀😀😀") == 3
