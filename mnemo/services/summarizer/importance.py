"""A summary's importance (1-10): a documented heuristic, no LLM."""

from __future__ import annotations

import re
from collections.abc import Sequence

from mnemo.services.summarizer.audience import RangeMessage
from mnemo.shared.tokens import estimate_tokens

# Words that usually mark plot-relevant turns in roleplay and chat (promises, secrets, loss, conflict).
SIGNIFICANT = frozenset(
    [
        "die",
        "died",
        "dead",
        "death",
        "kill",
        "killed",
        "murder",
        "love",
        "loved",
        "hate",
        "secret",
        "secrets",
        "promise",
        "promised",
        "swear",
        "betray",
        "betrayed",
        "marry",
        "married",
        "wedding",
        "war",
        "battle",
        "attack",
        "escape",
        "fled",
        "rescue",
        "born",
        "pregnant",
        "remember",
        "forget",
        "never",
        "always",
        "forever",
        "truth",
        "lie",
        "lied",
        "confess",
        "confessed",
        "stolen",
        "steal",
        "treasure",
        "curse",
        "cursed",
        "prophecy",
        "king",
        "queen",
        "crown",
        "blood",
        "poison",
        "wound",
        "wounded",
    ]
)
_WORD = re.compile(r"[a-zA-Z']+")


def importance(messages: Sequence[RangeMessage], participants: Sequence[str]) -> int:
    """1-10, a documented heuristic (no LLM), higher for ranges likely to matter later.

    Start at 3; +1 for one distinct significant word (:data:`SIGNIFICANT`), +2 for three or more, +3 for
    six or more; +1 for at least two exclamation marks (heightened emotion); +1 for three or more
    participants; +1 when messages average 40+ estimated tokens (substantive writing rather than
    small talk); clamped to 1..10.
    """
    words = {w.lower() for m in messages for w in _WORD.findall(m.content)}
    hits = len(words & SIGNIFICANT)
    score = 3 + (3 if hits >= 6 else 2 if hits >= 3 else 1 if hits else 0)
    if sum(m.content.count("!") for m in messages) >= 2:
        score += 1
    if len(participants) >= 3:
        score += 1
    if messages and sum(estimate_tokens(m.content) for m in messages) / len(messages) >= 40:
        score += 1
    return max(1, min(10, score))
