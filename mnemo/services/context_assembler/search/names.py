"""Participants' names as a question writes them, misspellings included (pure).

People misspell each other's names in questions about a conversation ("Muhammad" for "Muhhamed", "Aqib" for
"Akib"): an exact match then misses the name, so the query keeps it (pulling towards turns that greet that
person rather than what they said) and the ranking does not know who is asked about. :func:`spelled_names`
finds the question's words that are such a variant of a known name. It is deliberately narrow, so an ordinary
word is not taken for a name: only a capitalised word that does not start the text (a proper noun as written),
of at least ``MIN_LETTERS`` letters, with the same first letter and at most one letter more or fewer than the
name, and ``difflib``'s similarity ratio at least ``MIN_RATIO`` (one or two letters changed in an 8-letter name,
one in a 4-letter one). Scripts without case (Chinese, Japanese, Korean) match exactly only.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection

__all__ = ["MIN_LETTERS", "MIN_RATIO", "spelled_names", "variant_of"]

MIN_LETTERS = 4
MIN_RATIO = 0.75

_WORD = re.compile(r"\w+", re.UNICODE)


def variant_of(word: str, name: str) -> bool:
    """Whether ``word`` (lowercased) is ``name`` (lowercased) or a close misspelling of it (see the module)."""
    if word == name:
        return True
    if min(len(word), len(name)) < MIN_LETTERS or word[0] != name[0] or abs(len(word) - len(name)) > 1:
        return False
    return difflib.SequenceMatcher(None, word, name).ratio() >= MIN_RATIO


def spelled_names(text: str, names: Collection[str]) -> dict[str, str]:
    """The words of ``text`` that name one of ``names`` (lowercased first names), lowercased, each with the
    name it stands for: exact matches (any case) and misspellings (capitalised words past the first)."""
    found: dict[str, str] = {}
    for i, match in enumerate(_WORD.finditer(text)):
        word = match.group().lower()
        if word in names:
            found[word] = word
            continue
        if i == 0 or not match.group()[0].isupper():
            continue
        close = [n for n in names if variant_of(word, n)]
        if len(close) == 1:
            found[word] = close[0]
    return found
