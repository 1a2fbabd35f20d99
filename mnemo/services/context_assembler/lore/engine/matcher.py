"""Key matching for a whole book in one scan (spec §3.5), instead of one regex per key.

Plain keys of entries that share a matching mode (case sensitivity, whole words) are compiled into one
trie-shaped regex. Python's `re` has no Aho-Corasick, but a trie regex fails fast at positions where no key
starts, and stepping the search one character past each hit finds overlapping keys too. At a hit, every key
that is a prefix of the longest match is a candidate, checked for its own right boundary. The work grows with
the haystack and the number of hits, not with the number of keys.

Whole-word matching copies SillyTavern: a key with whitespace is a substring test; a single-word key needs a
non-word character (ASCII `\\W`, so any CJK or accented character counts) or the text's edge on both sides.
That makes whole-word matching on CJK text behave almost like substring matching, exactly as in SillyTavern.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from mnemo.shared.lore.keys import ASCII_WORD

_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_BEFORE = f"(?<![{ASCII_WORD}])"
_AFTER = f"(?![{ASCII_WORD}])"
_MAX_TRIE_KEY = 400  # longer keys are tested one by one; they are rare and would make the pattern deep


def normalise(text: str, case_sensitive: bool) -> str:
    """Both sides are lower-cased for case-insensitive matching, as SillyTavern's `toLowerCase`."""
    return text if case_sensitive else text.lower()


def _trie_pattern(keys: Iterable[str]) -> str:
    trie: dict[str, dict] = {}  # type: ignore[type-arg]
    for key in keys:
        node = trie
        for ch in key:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict) -> str:  # type: ignore[type-arg]
        terminal = "" in node
        branches = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return "(?:" + body + ")?" if terminal else body

    return emit(trie)


@dataclass
class KeySet:
    """All plain keys of one matching mode, compiled for one-pass scanning."""

    case_sensitive: bool
    whole_words: bool
    keys: set[str] = field(default_factory=set)
    _word_rx: re.Pattern[str] | None = None
    _sub_rx: re.Pattern[str] | None = None
    _prefixes: dict[str, list[str]] = field(default_factory=dict)
    _long: list[str] = field(default_factory=list)

    def add(self, normalised_key: str) -> None:
        self.keys.add(normalised_key)

    def compile(self) -> None:
        word, sub = [], []
        for key in self.keys:
            if len(key) > _MAX_TRIE_KEY:
                self._long.append(key)
            elif self.whole_words and not any(ch.isspace() for ch in key):
                word.append(key)
            else:
                sub.append(key)
        if word:
            self._word_rx = re.compile(_BEFORE + "(?:" + _trie_pattern(word) + ")")
        if sub:
            self._sub_rx = re.compile(_trie_pattern(sub))
        for group in (word, sub):
            members = set(group)
            for key in group:
                self._prefixes[key] = [key[:i] for i in range(len(key), 0, -1) if key[:i] in members]

    def find(self, haystack: str) -> set[str]:
        """The keys of this set found in ``haystack`` (already normalised with ``normalise``)."""
        found: set[str] = set()
        if self._word_rx is not None:
            self._scan(self._word_rx, haystack, found, boundary=True)
        if self._sub_rx is not None:
            self._scan(self._sub_rx, haystack, found, boundary=False)
        found.update(k for k in self._long if self._long_hit(k, haystack))
        return found

    def _scan(self, rx: re.Pattern[str], hay: str, found: set[str], *, boundary: bool) -> None:
        search = rx.search
        prefixes = self._prefixes
        n = len(hay)
        m = search(hay, 0)
        while m is not None:
            start = m.start()
            for key in prefixes[m.group()]:
                if key in found:
                    continue
                end = start + len(key)
                if not boundary or end == n or hay[end] not in _WORD_CHARS:
                    found.add(key)
            m = search(hay, start + 1)

    def _long_hit(self, key: str, hay: str) -> bool:
        if not self.whole_words or any(ch.isspace() for ch in key):
            return key in hay
        return re.search(_BEFORE + re.escape(key) + _AFTER, hay) is not None


def plain_key_matches(key: str, haystack: str, case_sensitive: bool, whole_words: bool) -> bool:
    """One plain key against one haystack: the reference rule, used for scoring and by the naive benchmark."""
    needle = normalise(key.strip(), case_sensitive)
    hay = normalise(haystack, case_sensitive)
    if whole_words and len(needle.split()) <= 1 and needle == needle.strip():
        return re.search(_BEFORE + re.escape(needle) + _AFTER, hay) is not None
    return needle in hay
