"""Cut a read document into chunks for retrieval (pure): the design's sliding windows.

Windows of ``MIN_TOKENS``-``MAX_TOKENS`` (750-1,000) tokens with ``OVERLAP_TOKENS`` (75) of overlap. A cut
goes at a section boundary first (a chunk never spans two headings, so its heading path is exact), then
between paragraphs, then between sentences, and only for a sentence longer than a window between words.
The overlap is the previous chunk's trailing sentences (or words) of the same section, so a passage that
straddles a cut is whole in one chunk. What is embedded is the heading path, a blank line and the text;
what is shown is the text alone (:attr:`DocChunk.embedded`). ``hash`` is over the embedded text: an
unchanged chunk of a new version keeps its hash and its point (no second embedding).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from itertools import groupby

from mnemo.services.lore.documents.reading import Block
from mnemo.shared.tokens import estimate_tokens

MIN_TOKENS = 750
MAX_TOKENS = 1000
OVERLAP_TOKENS = 75
_SENTENCE = re.compile(r"(?<=[.!?…])\s+|(?<=[.!?…][\"'”’)\]])\s+|(?<=[。！？])")


@dataclass(frozen=True)
class DocChunk:
    index: int
    text: str
    heading: str
    page: int | None  # where the chunk's text starts (its overlap included)
    tokens: int
    last_page: int | None = None  # where it ends, when that is another page

    @property
    def embedded(self) -> str:
        return f"{self.heading}\n\n{self.text}" if self.heading else self.text

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.embedded.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class _Piece:
    text: str
    page: int | None
    paragraph_end: bool  # the last piece of its paragraph: joined to the next with a blank line


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(text) if s.strip()]


def _words(text: str, limit: int) -> list[str]:
    """A sentence longer than a window, cut between words (characters for text without spaces)."""
    out: list[str] = []
    current = ""
    for word in re.findall(r"\S+\s*", text):
        while estimate_tokens(word) > limit:  # one "word" over budget (CJK, a URL): cut between characters
            cut = max(1, len(word) * limit // (2 * estimate_tokens(word)))
            if current:
                out.append(current)
                current = ""
            out.append(word[:cut])
            word = word[cut:]
        if current and estimate_tokens(current + word) > limit:
            out.append(current)
            current = ""
        current += word
    if current.strip():
        out.append(current)
    return [w.strip() for w in out if w.strip()]


def _pieces(blocks: list[Block]) -> list[_Piece]:
    """Paragraphs whole when they fit in a window, else their sentences (else their words)."""
    out: list[_Piece] = []
    for b in blocks:
        if estimate_tokens(b.text) <= MAX_TOKENS:
            out.append(_Piece(b.text, b.page, True))
            continue
        parts: list[str] = []
        for s in _sentences(b.text):
            parts += [s] if estimate_tokens(s) <= MAX_TOKENS else _words(s, MAX_TOKENS)
        out += [_Piece(p, b.page, i == len(parts) - 1) for i, p in enumerate(parts)]
    return out


def _join(pieces: list[_Piece]) -> str:
    text = ""
    for i, p in enumerate(pieces):
        text += p.text
        if i < len(pieces) - 1:
            text += "\n\n" if p.paragraph_end else " "
    return text


def _overlap(pieces: list[_Piece]) -> list[_Piece]:
    """The trailing sentences of ``pieces`` within ``OVERLAP_TOKENS`` (at least one sentence's tail in words)."""
    tail: list[_Piece] = []
    for p in reversed(pieces):
        for s in reversed(_sentences(p.text) or [p.text]):
            if estimate_tokens(" ".join([s, *(t.text for t in tail)])) > OVERLAP_TOKENS:
                if not tail:  # one long sentence: its last words
                    words = s.split()
                    keep: list[str] = []
                    while words and estimate_tokens(" ".join([words[-1], *keep])) <= OVERLAP_TOKENS:
                        keep.insert(0, words.pop())
                    if keep:
                        tail.insert(0, _Piece(" ".join(keep), p.page, False))
                return tail
            tail.insert(0, _Piece(s, p.page, False))
    return tail


def _section(blocks: list[Block]) -> list[tuple[str, int | None, int | None]]:
    """(text, first page, last page) of each window of one section."""
    pieces = _pieces(blocks)
    windows: list[tuple[str, int | None, int | None]] = []
    current: list[_Piece] = []
    fresh = 0  # pieces of ``current`` that are not overlap
    for piece in pieces:
        if current and fresh and estimate_tokens(_join([*current, piece])) > MAX_TOKENS:
            windows.append((_join(current), current[0].page, current[-1].page))
            current = [*_overlap(current), piece]
            fresh = 1
            if estimate_tokens(_join(current)) > MAX_TOKENS:  # the overlap leaves no room: drop it
                current = [piece]
            continue
        current.append(piece)
        fresh += 1
    if fresh:
        windows.append((_join(current), current[0].page, current[-1].page))
    return windows


def chunk_blocks(blocks: list[Block]) -> list[DocChunk]:
    """Every section's windows in document order, numbered from 0."""
    chunks: list[DocChunk] = []
    for heading, group in groupby(blocks, key=lambda b: b.heading):
        for text, first, last in _section(list(group)):
            end = last if last != first else None
            chunks.append(DocChunk(len(chunks), text, heading, first, estimate_tokens(text), end))
    return chunks
