"""Token counting: the configured LLM's own tokenizer where one is available, a documented estimator otherwise.

``TokenCounter`` is the port (``count(text) -> int``). ``EstimatedTokens`` (the default) is the estimator
below; ``HfTokenizerTokens`` counts with a Hugging Face ``tokenizers`` ``tokenizer.json`` file, the one that
matches the configured LLM (the file is read from disk once; nothing is downloaded at run time).
``token_counter(path)`` chooses between them.

The estimator: the larger of (characters / 4) and (words * 4 / 3), rounded up. English prose averages about
4 characters and 0.75 words per BPE token; taking the larger of the two keeps code, CJK text (few spaces,
many tokens per character group) and short words from being undercounted. It errs on the high side on
purpose: a budget that is slightly too generous to the LLM is cheaper than a truncated prompt.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Protocol

_WIDE = re.compile("[\u2e80-\U0010ffff]")


def estimate_parts(text: str) -> tuple[int, int, int]:
    """What the estimator counts in ``text``: characters, words, wide characters. Each is a sum over the pieces
    of a text cut at whitespace, so a section's parts add up from its lines' (``assemble/section_tokens.py``)."""
    # CJK and similar scripts: about one token per character (counted in C: the budget counts often).
    return len(text), len(text.split()), 0 if text.isascii() else len(_WIDE.findall(text))


def tokens_of_parts(chars: int, words: int, wide: int) -> int:
    """The estimate from :func:`estimate_parts`' three counts (0 for no characters)."""
    return max(1, math.ceil(max(chars / 4, words * 4 / 3, wide))) if chars else 0


def estimate_tokens(text: str) -> int:
    return tokens_of_parts(*estimate_parts(text)) if text else 0


class TokenCounter(Protocol):
    def count(self, text: str) -> int:
        """Tokens ``text`` takes in the LLM's prompt (0 for the empty string)."""
        ...


class EstimatedTokens:
    """:func:`estimate_tokens`: no tokenizer needed, errs on the high side."""

    def count(self, text: str) -> int:
        return estimate_tokens(text)


class HfTokenizerTokens:
    """Exact counts with a Hugging Face ``tokenizer.json`` (special tokens such as BOS are not counted: the
    chat template adds them once per prompt, not per section). Truncation and padding in the file are
    switched off, or a long section would count as the model's maximum length."""

    def __init__(self, path: str | Path) -> None:
        from tokenizers import Tokenizer  # only when configured

        tok: Any = Tokenizer.from_file(str(path))
        tok.no_truncation()
        tok.no_padding()
        self._tokenizer = tok

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


def token_counter(tokenizer_file: str | Path | None) -> TokenCounter:
    """The tokenizer in ``tokenizer_file`` when one is named, else the estimator. A named file that is
    missing or invalid raises: a misconfigured tokenizer must fail at start, not silently fall back."""
    return HfTokenizerTokens(tokenizer_file) if tokenizer_file else EstimatedTokens()
