"""Key matching for a whole book in one pass (spec §3.5), and the keys each text holds remembered per text.

Plain keys of entries that share a matching mode (case sensitivity, whole words) go into one Aho-Corasick
automaton (pyahocorasick, C): one pass over a text reports every occurrence of every key, overlapping ones
included, in time linear in the text plus the occurrences, whatever the number of keys. The trie-shaped Python
regex it replaces cost 0.8 s to compile for a 400-entry book and up to 170 ms per pass on some texts
(backtracking at every position where a key started); the automaton builds in a few ms.

A haystack is made of segments (chat messages, extra texts, entries' contents) joined by line breaks, and
every key without a line break in it is found in the haystack exactly when it is found in one of its segments
(a join is a line break, which counts as a word boundary, like a text's edge). So :meth:`KeySet.segment`
remembers what each segment holds (by a digest of its text, per compiled book): a request scans only the text
that is new since the conversation's previous requests (the new messages), and the entries' contents that
recursion feeds back are scanned once per book version. Keys with a line break are tested on the whole
haystack (:meth:`KeySet.spanning`).

Whole-word matching copies SillyTavern: a key with whitespace is a substring test; a single-word key needs a
non-word character (ASCII `\\W`, so any CJK or accented character counts) or the text's edge on both sides.
That makes whole-word matching on CJK text behave almost like substring matching, exactly as in SillyTavern.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import ahocorasick

from mnemo.shared.lore.keys import ASCII_WORD

_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_BEFORE = f"(?<![{ASCII_WORD}])"
_AFTER = f"(?![{ASCII_WORD}])"
_SPACE = re.compile(r"\s")  # str.isspace's characters
#: Occurrences between two deadline checks: a book whose keys nest (``a``, ``aa``, ``aaa``, ...) reports many
#: occurrences per character, and its scan must still stop at its budget.
CHECK_EVERY = 4096
#: Segments remembered per key set (then the memory starts again): far above a conversation's scan window.
SEGMENT_MEMORY = 16384

Check = Callable[[], None]


def normalise(text: str, case_sensitive: bool) -> str:
    """Both sides are lower-cased for case-insensitive matching, as SillyTavern's `toLowerCase`."""
    return text if case_sensitive else text.lower()


def _never() -> None:
    return None


@dataclass
class KeySet:
    """All plain keys of one matching mode, compiled for one-pass scanning."""

    case_sensitive: bool
    whole_words: bool
    keys: set[str] = field(default_factory=set)
    _automaton: ahocorasick.Automaton | None = None
    _spanning: list[str] = field(default_factory=list)  # keys with a line break: tested on the whole haystack
    _segments: dict[bytes, frozenset[str]] = field(default_factory=dict)

    def add(self, normalised_key: str) -> None:
        self.keys.add(normalised_key)

    def compile(self) -> None:
        automaton = ahocorasick.Automaton()
        for key in sorted(self.keys):
            if "\n" in key:
                self._spanning.append(key)
            else:
                # (key, whether it needs word boundaries): a key with whitespace is a substring test
                automaton.add_word(key, (key, self.whole_words and _SPACE.search(key) is None))
        if len(automaton):
            automaton.make_automaton()
            self._automaton = automaton

    def find(self, haystack: str, check: Check = _never) -> set[str]:
        """The keys of this set found in ``haystack`` (already normalised with ``normalise``)."""
        found = self._scan(haystack, check)
        found.update(self.spanning(haystack))
        return found

    def segment(self, text: str, check: Check = _never) -> frozenset[str]:
        """The keys without a line break found in ``text`` (a segment, not normalised), remembered per text."""
        if self._automaton is None or not text:
            return frozenset()
        hay = normalise(text, self.case_sensitive)
        digest = hashlib.blake2b(hay.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        found = self._segments.get(digest)
        if found is None:
            found = frozenset(self._scan(hay, check))
            if len(self._segments) >= SEGMENT_MEMORY:
                self._segments.clear()
            self._segments[digest] = found
        return found

    def forget(self) -> None:
        """Drop the remembered segments (a benchmark's cold scans; nothing else needs it)."""
        self._segments.clear()

    @property
    def has_spanning(self) -> bool:
        return bool(self._spanning)

    def spanning(self, haystack: str) -> list[str]:
        """The keys with a line break found in ``haystack`` (normalised): substring tests (they hold whitespace)."""
        return [k for k in self._spanning if k in haystack]

    def _scan(self, hay: str, check: Check) -> set[str]:
        found: set[str] = set()
        if self._automaton is None:
            return found
        n = len(hay)
        seen = 0
        for end, (key, boundary) in self._automaton.iter(hay):
            seen += 1
            if seen % CHECK_EVERY == 0:
                check()
            if key in found:
                continue
            if boundary:
                start = end + 1 - len(key)
                if (start > 0 and hay[start - 1] in _WORD_CHARS) or (end + 1 < n and hay[end + 1] in _WORD_CHARS):
                    continue
            found.add(key)
        return found


def keys_in(keyset: KeySet, segments: Iterable[str], check: Check = _never) -> set[str]:
    """The union of what ``segments`` hold (see :meth:`KeySet.segment`), spanning keys left out."""
    found: set[str] = set()
    for text in segments:
        found |= keyset.segment(text, check)
    return found


def plain_key_matches(key: str, haystack: str, case_sensitive: bool, whole_words: bool) -> bool:
    """One plain key against one haystack: the reference rule, used for scoring and by the naive benchmark."""
    needle = normalise(key.strip(), case_sensitive)
    hay = normalise(haystack, case_sensitive)
    if whole_words and len(needle.split()) <= 1 and needle == needle.strip():
        return re.search(_BEFORE + re.escape(needle) + _AFTER, hay) is not None
    return needle in hay
