"""Cut text into chunks that fit the embedding model's window, preferring natural boundaries.

Contract of ``chunk_text``:
- A text whose estimate (``mnemo.shared.tokens.estimate_tokens``) is within ``max_tokens`` is one chunk, verbatim.
  Empty or whitespace-only text gives no chunks.
- Otherwise every chunk is a slice ``text[start_char:end_char]`` whose estimate is within ``max_tokens``;
  chunks are in text order, together they cover every non-whitespace character, and the same input always
  gives the same chunks. A cut goes at the last paragraph break that fits, else the last sentence end, else
  between words; a word too long for the budget on its own (a URL, text without spaces such as CJK) is cut
  between characters.
- Consecutive chunks overlap by up to ``overlap_tokens`` worth of trailing words, so a fact that straddles
  a cut is still whole in one of them.

The default window is 256 tokens, the bundled model's truncation length (``mnemo/shared/embedders/bundled.py``):
anything past it would be cut off unseen. The estimate errs high, so chunks sit a little under the window.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from mnemo.shared.tokens import estimate_tokens

DEFAULT_MAX_TOKENS = 256
DEFAULT_OVERLAP_TOKENS = 32
# Lore entries (vector and hybrid activation): the window, about 750 tokens with 50 of overlap. Entries
# are written to be read whole, so a larger window keeps one entry in one chunk far more often; note that the
# bundled embedder reads only the first 256 tokens of a chunk (an entry's opening usually says what it is about).
LORE_MAX_TOKENS = 750
LORE_OVERLAP_TOKENS = 50

_WORD = re.compile(r"\S+")
_PARAGRAPH_GAP = re.compile(r"\n[ \t\r\f\v]*\n")
_SENTENCE_END = re.compile(r"[.!?…。！？][\"'”’)\]]*$")

# Strength of the break after an atom: the cut goes after the strongest one in the window.
_WORD_BREAK, _SENTENCE_BREAK, _PARAGRAPH_BREAK = 0, 1, 2


@dataclass(frozen=True)
class Chunk:
    text: str
    index: int
    start_char: int
    end_char: int


def chunk_text(
    text: str, max_tokens: int = DEFAULT_MAX_TOKENS, overlap_tokens: int = DEFAULT_OVERLAP_TOKENS
) -> list[Chunk]:
    if max_tokens < 2 or not 0 <= overlap_tokens < max_tokens:
        raise ValueError("need max_tokens >= 2 (one word counts 2) and 0 <= overlap_tokens < max_tokens")
    if not text.strip():
        return []
    if estimate_tokens(text) <= max_tokens:
        return [Chunk(text, 0, 0, len(text))]
    atoms = _atoms(text, max_tokens)
    ends = [end for _, end, _ in atoms]
    spans: list[tuple[int, int]] = []
    first = 0
    last = _best_cut(atoms, first, _last_fitting(text, atoms, ends, first, max_tokens))
    while True:
        spans.append((atoms[first][0], atoms[last][1]))
        if last == len(atoms) - 1:
            break
        nxt = _overlap_start(text, atoms, first, last, overlap_tokens)
        nxt_last = _best_cut(atoms, nxt, _last_fitting(text, atoms, ends, nxt, max_tokens))
        if nxt_last <= last:  # the overlap left no room for new text: start right after this chunk
            nxt = last + 1
            nxt_last = _best_cut(atoms, nxt, _last_fitting(text, atoms, ends, nxt, max_tokens))
        first, last = nxt, nxt_last
    return [Chunk(text[s:e], i, s, e) for i, (s, e) in enumerate(spans)]


def _atoms(text: str, max_tokens: int) -> list[tuple[int, int, int]]:
    """Words as ``(start, end, break_after)``; words over budget are split between characters."""
    atoms: list[tuple[int, int, int]] = []
    words = list(_WORD.finditer(text))
    for n, word in enumerate(words):
        start, end = word.span()
        gap = text[end : words[n + 1].start()] if n + 1 < len(words) else ""
        if _PARAGRAPH_GAP.search(gap):
            strength = _PARAGRAPH_BREAK
        elif _SENTENCE_END.search(word.group()):
            strength = _SENTENCE_BREAK
        else:
            strength = _WORD_BREAK
        pieces = _split_long_word(text, start, end, max_tokens)
        atoms.extend((s, e, _WORD_BREAK) for s, e in pieces[:-1])
        atoms.append((*pieces[-1], strength))
    return atoms


def _split_long_word(text: str, start: int, end: int, max_tokens: int) -> list[tuple[int, int]]:
    if estimate_tokens(text[start:end]) <= max_tokens:
        return [(start, end)]
    pieces = []
    while start < end:
        size = min(end - start, max_tokens * 4)
        while size > 1 and estimate_tokens(text[start : start + size]) > max_tokens:
            size = max(1, size * 3 // 4)
        pieces.append((start, start + size))
        start += size
    return pieces


def _last_fitting(text: str, atoms: list[tuple[int, int, int]], ends: list[int], first: int, max_tokens: int) -> int:
    """The last atom index such that ``atoms[first..last]`` fits; binary search (the estimate only grows).

    A fitting span has at most ``4 * max_tokens`` characters (the estimate is at least characters / 4).
    """
    start = atoms[first][0]
    lo, hi = first, max(first, bisect.bisect_right(ends, start + 4 * max_tokens) - 1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[start : atoms[mid][1]]) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _best_cut(atoms: list[tuple[int, int, int]], first: int, last: int) -> int:
    """Cut after the strongest break in the window, unless that leaves a chunk under half of it."""
    if last == len(atoms) - 1:
        return last
    floor = first + (last - first) // 2
    for strength in (_PARAGRAPH_BREAK, _SENTENCE_BREAK):
        for i in range(last, floor - 1, -1):
            if atoms[i][2] >= strength:
                return i
    return last


def _overlap_start(text: str, atoms: list[tuple[int, int, int]], first: int, last: int, overlap: int) -> int:
    """First atom of the next chunk: as many trailing atoms of this one as fit in ``overlap`` tokens."""
    start = last + 1
    end = atoms[last][1]
    while start - 1 > first and estimate_tokens(text[atoms[start - 1][0] : end]) <= overlap:
        start -= 1
    return start


def chunk_strings(
    text: str, max_tokens: int = DEFAULT_MAX_TOKENS, overlap_tokens: int = DEFAULT_OVERLAP_TOKENS
) -> list[str]:
    """The texts of :func:`chunk_text`'s chunks."""
    return [c.text for c in chunk_text(text, max_tokens, overlap_tokens)]
