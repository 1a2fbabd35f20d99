"""Text to lexical terms in any language: the one analyzer of documents and queries (``mnemo/shared/sparse.py``).

Steps, each language-independent unless said otherwise:

1. NFKC, then Unicode case folding: full-width ``ＡＢＣ１２３`` and half-width katakana ``ｶﾀｶﾅ`` become
   ``abc123`` and ``カタカナ``, ligatures split, ``Straße`` folds to ``strasse``.
2. Accents are stripped from Latin letters only (``café`` = ``cafe``, ``Zürich`` = ``zurich``): the combining
   marks after a Latin base letter are dropped. Other scripts keep theirs, because there they are letters of
   their own (Cyrillic ``й``, Japanese ``が``, Devanagari vowel signs).
3. Words are ``\\w+`` runs, cut where the script changes between "spaced" scripts and those written without
   spaces. Runs of Han, Hiragana, Katakana and Hangul (CJK) and of Thai, Lao, Khmer and Myanmar become
   overlapping character bigrams (a run of one character stays a unigram). Why bigrams rather than a PyPI
   segmenter (jieba, SudachiPy, MeCab): a segmenter is one language's (Chinese or Japanese, not both, not
   Thai), needs a dictionary of tens of MB, and cuts names it does not know (``玄天宗``) differently in a
   document and in a short query; bigrams need nothing, treat every such script alike, and a query's word is
   always found inside a document that contains it (CJKAnalyzer in Lucene makes the same choice). Hangul has
   spaces, but its words carry particles (``서울에서``), so it is bigrammed too.
4. Other words: the small English stop list, then the light English stemmer (:func:`stem`), only on ASCII
   words. The language of a chat message is not known, so this is the one language-specific step: kept for
   English because it measured +0.04 R@10 on REALTALK, and harmless elsewhere because it changes only ASCII
   words by English suffixes, the same way in documents and queries.

``ANALYZER_VERSION`` names this behaviour; vectors made by another version need ``mnemo reindex``.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

#: Recorded with every point (``mnemo/shared/vectors/points.py``); bump when a change moves any term.
ANALYZER_VERSION = "2"

_NAIVE_WORD = re.compile(r"\w+", re.UNICODE)


def _word_pattern() -> re.Pattern[str]:
    """``\\w`` plus every combining mark: Python's ``\\w`` leaves out marks (categories Mn, Mc, Me), which would
    cut Thai, Devanagari or decomposed Korean words in the middle at each vowel sign."""
    ranges: list[tuple[int, int]] = []
    for cp in range(0x300, 0x30000):
        if unicodedata.category(chr(cp)).startswith("M"):
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1] = (ranges[-1][0], cp)
            else:
                ranges.append((cp, cp))
    marks = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)
    return re.compile(rf"[\w{marks}]+")


_WORD = _word_pattern()

# Scripts written without spaces between words, by code point range: (first, last, class).
_NO_SPACE_RANGES = (
    (0x0E00, 0x0E7F, "thai"),  # Thai
    (0x0E80, 0x0EFF, "thai"),  # Lao
    (0x1000, 0x109F, "thai"),  # Myanmar
    (0x1780, 0x17FF, "thai"),  # Khmer
    (0x1100, 0x11FF, "cjk"),  # Hangul Jamo
    (0x2E80, 0x2FDF, "cjk"),  # CJK radicals, Kangxi radicals
    (0x3005, 0x3007, "cjk"),  # 々 〆 〇
    (0x3040, 0x30FF, "cjk"),  # Hiragana, Katakana
    (0x3130, 0x318F, "cjk"),  # Hangul compatibility Jamo
    (0x31F0, 0x31FF, "cjk"),  # Katakana phonetic extensions
    (0x3400, 0x4DBF, "cjk"),  # CJK extension A
    (0x4E00, 0x9FFF, "cjk"),  # CJK unified ideographs
    (0xA960, 0xA97F, "cjk"),  # Hangul Jamo extended A
    (0xAC00, 0xD7AF, "cjk"),  # Hangul syllables
    (0xF900, 0xFAFF, "cjk"),  # CJK compatibility ideographs
    (0x20000, 0x3FFFF, "cjk"),  # CJK extensions B and later
)

STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "can",
        "could",
        "how",
        "just",
        "should",
        "would",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "hers",
        "him",
        "his",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "too",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "you",
        "your",
        "yours",
    ]
)


def script_class(ch: str) -> str:
    """``"cjk"``, ``"thai"`` (another script without spaces) or ``"word"`` for one character."""
    cp = ord(ch)
    if cp < 0x0E00:
        return "word"
    for first, last, cls in _NO_SPACE_RANGES:
        if first <= cp <= last:
            return cls
    return "word"


@lru_cache(maxsize=4096)
def _is_latin(ch: str) -> bool:
    return unicodedata.name(ch, "").startswith("LATIN")


def normalise(text: str) -> str:
    """NFKC, case folding, and accents stripped from Latin letters (steps 1 and 2)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    if folded.isascii():
        return folded
    out: list[str] = []
    base_latin = False
    for ch in unicodedata.normalize("NFD", folded):
        if unicodedata.combining(ch):
            if not base_latin:
                out.append(ch)
            continue
        base_latin = _is_latin(ch)
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))


def stem(word: str) -> str:
    """A light, deterministic English suffix stemmer (not Porter: fewer rules, no dependency).

    Only ASCII alphabetic words longer than 3 letters change (numbers, names in other scripts and short words
    are kept): ``-ies`` -> ``-y``; ``-sses/-xes/-ches/-shes/-zes`` lose ``es``; another final ``s`` goes
    unless after ``s``, ``u`` or ``i``; then one of ``-ingly, -edly, -ing, -ed, -ly`` when 3 letters remain
    (undoubling a final double consonant: "running" -> "run"); then a final ``e``. Document and query go
    through the same function, so a crude stem is still a consistent one.
    """
    if len(word) <= 3 or not (word.isascii() and word.isalpha()):
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "xes", "ches", "shes", "zes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ingly", "edly", "ing", "ed", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def _runs(word: str) -> list[tuple[str, str]]:
    """``word`` cut where its script class changes: ``[(class, run), ...]``."""
    runs: list[tuple[str, str]] = []
    start = 0
    current = script_class(word[0])
    for i in range(1, len(word)):
        cls = script_class(word[i])
        if cls != current:
            runs.append((current, word[start:i]))
            start, current = i, cls
    runs.append((current, word[start:]))
    return runs


def bigrams(run: str) -> list[str]:
    """Overlapping bigrams of the characters of ``run`` (a character with its combining marks, such as a Thai
    consonant and its vowel sign, counts as one); a single character is its own term."""
    chars: list[str] = []
    for ch in run:
        if chars and unicodedata.category(ch).startswith("M"):
            chars[-1] += ch
        else:
            chars.append(ch)
    if len(chars) == 1:
        return chars
    return [chars[i] + chars[i + 1] for i in range(len(chars) - 1)]


def terms(text: str) -> list[str]:
    """The lexical terms of ``text``, in order, with repeats (the term frequencies count them)."""
    out: list[str] = []
    for word in _WORD.findall(normalise(text)):
        if word.isascii():  # the common case, one script: skip the per-character scan
            if word not in STOP_WORDS:
                out.append(stem(word))
            continue
        for cls, run in _runs(word):
            if cls == "word":
                if run not in STOP_WORDS:
                    out.append(stem(run))
            else:
                out.extend(bigrams(run))
    return out


def hiragana_only(term: str) -> bool:
    """Whether ``term`` is written in hiragana alone (``どこ``, ``ます``, ``んで``). Japanese spells in hiragana
    most of what English has stop words for (particles, auxiliaries, inflections, question words), and
    content mostly in kanji and katakana; a bigram that crosses into kanji (``に住``) is not hiragana only."""
    return bool(term) and all("\u3040" <= ch <= "\u309f" for ch in term)


def naive_terms(text: str) -> list[str]:
    """The previous analyzer, ``\\w+`` over the lowercased text: the naive baseline of the benchmarks."""
    return _NAIVE_WORD.findall(text.lower())
