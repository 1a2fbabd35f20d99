"""Chunking documents (``mnemo/services/lore/documents/chunks.py``): window sizes, overlap, boundaries, hashes."""

from __future__ import annotations

import itertools
import random

from mnemo.services.lore.documents.chunks import MAX_TOKENS, MIN_TOKENS, OVERLAP_TOKENS, chunk_blocks
from mnemo.services.lore.documents.reading import Block
from mnemo.shared.tokens import estimate_tokens

WORDS = [
    "river",
    "stone",
    "lantern",
    "harbor",
    "violet",
    "copper",
    "meadow",
    "thunder",
    "silver",
    "orchard",
    "falcon",
    "ember",
]


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18))).capitalize() + "."


def _book(seed: int = 7) -> list[Block]:
    rng = random.Random(seed)
    blocks = []
    for chapter in range(3):
        for n in range(60):
            text = " ".join(_sentence(rng) for _ in range(rng.randint(1, 8)))
            blocks.append(Block(text, f"Part I > Chapter {chapter + 1}", page=chapter * 20 + n // 3 + 1))
    return blocks


def test_windows_are_750_to_1000_tokens_and_never_span_a_section() -> None:
    chunks = chunk_blocks(_book())
    assert [c.index for c in chunks] == list(range(len(chunks)))
    by_section: dict[str, list[int]] = {}
    for c in chunks:
        assert estimate_tokens(c.text) <= MAX_TOKENS
        by_section.setdefault(c.heading, []).append(c.tokens)
    assert len(by_section) == 3
    for sizes in by_section.values():
        assert all(s >= MIN_TOKENS for s in sizes[:-1]), "only a section's last window may be short"


def test_consecutive_windows_overlap_by_whole_sentences_and_cover_the_text() -> None:
    blocks = _book()
    chunks = [c for c in chunk_blocks(blocks) if c.heading == "Part I > Chapter 1"]
    for before, after in itertools.pairwise(chunks):
        first_sentence = after.text.split(". ")[0]
        assert first_sentence in before.text, "the next window starts with the end of this one"
        assert estimate_tokens(after.text[: after.text.index(first_sentence) + len(first_sentence)]) <= (
            OVERLAP_TOKENS + estimate_tokens(first_sentence)
        )
    text = "\n\n".join(b.text for b in blocks if b.heading == "Part I > Chapter 1")
    for sentence in text.replace("\n\n", " ").split(". ")[::25]:
        assert any(sentence.strip(".") in c.text for c in chunks), "every sentence is in some window"


def test_a_cut_prefers_a_paragraph_end() -> None:
    chunks = chunk_blocks(_book())
    paragraphs = {b.text for b in _book()}
    ends_on_paragraph = sum(1 for c in chunks if any(c.text.endswith(p) for p in paragraphs))
    assert ends_on_paragraph == len(chunks), "paragraphs fit in a window, so every cut is between two"


def test_a_long_paragraph_is_cut_between_sentences_with_overlap() -> None:
    rng = random.Random(3)
    sentences = [_sentence(rng) for _ in range(400)]
    chunks = chunk_blocks([Block(" ".join(sentences))])
    assert len(chunks) > 3
    for c in chunks:
        assert c.text.endswith(".")
        assert estimate_tokens(c.text) <= MAX_TOKENS
    tail = chunks[0].text[-200:].split(". ")[-1]
    assert chunks[1].text.startswith(tail.strip()) or tail.strip() in chunks[1].text[: OVERLAP_TOKENS * 6]


def test_heading_is_embedded_not_shown_and_hash_follows_the_embedded_text() -> None:
    [a] = chunk_blocks([Block("Red dragons breathe fire.", "Dragons > Red", page=4)])
    [b] = chunk_blocks([Block("Red dragons breathe fire.", "Dragons > Blue", page=4)])
    [c] = chunk_blocks([Block("Red dragons breathe fire.", "Dragons > Red", page=9)])
    assert a.text == "Red dragons breathe fire."
    assert a.embedded == "Dragons > Red\n\nRed dragons breathe fire."
    assert (a.page, a.heading) == (4, "Dragons > Red")
    assert a.hash != b.hash, "the same words under another heading are another chunk"
    assert a.hash == c.hash, "a chunk that only moved to another page keeps its hash (and its point)"


def test_text_without_spaces_is_cut_between_characters() -> None:
    text = "竜" * 5000
    chunks = chunk_blocks([Block(text)])
    assert len(chunks) > 1
    assert all(estimate_tokens(c.text) <= MAX_TOKENS for c in chunks)
    assert "".join(c.text for c in chunks).count("竜") >= 5000
