"""Token estimation when no tokenizer of the configured LLM is available.

The estimator: the larger of (characters / 4) and (words * 4 / 3), rounded up. English prose averages about
4 characters and 0.75 words per BPE token; taking the larger of the two keeps code, CJK text (few spaces,
many tokens per character group) and short words from being undercounted. It errs on the high side on
purpose: a budget that is slightly too generous to the LLM is cheaper than a truncated prompt.
"""

from __future__ import annotations

import math


def estimate_tokens(text: str) -> int:
    if not text:
        return 0
    by_chars = len(text) / 4
    by_words = len(text.split()) * 4 / 3
    # CJK and similar scripts: about one token per character.
    wide = sum(1 for ch in text if ord(ch) >= 0x2E80)
    return max(1, math.ceil(max(by_chars, by_words, wide)))
