"""A bounded memo for the ranking's pure functions of one text (word sets, names in a line).

A conversation's next request ranks mostly the same candidates again, so remembering what was derived from each
text saves most of the ranking's work (issue 26). The memory must stay bounded whatever a tenant sends: a message
may hold 200,000 characters, and 8,192 of them would pin 1.6 GB, so only texts up to ``MAX_CHARS`` are
remembered; a longer one is derived again each time (its cost is its own tenant's).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, wraps
from typing import TypeVar

__all__ = ["MAX_CHARS", "per_text"]

MAX_CHARS = 4096  # 8,192 entries of at most this many characters: ~32 MB of keys per memo at most

R = TypeVar("R")


def per_text(maxsize: int) -> Callable[[Callable[[str], R]], Callable[[str], R]]:
    """``lru_cache(maxsize)`` over a pure function of one text, for texts of at most ``MAX_CHARS`` characters."""

    def wrap(derive: Callable[[str], R]) -> Callable[[str], R]:
        remembered = lru_cache(maxsize=maxsize)(derive)

        @wraps(derive)
        def call(text: str) -> R:
            return remembered(text) if len(text) <= MAX_CHARS else derive(text)

        return call

    return wrap
