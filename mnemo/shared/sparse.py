"""Text to a sparse lexical vector, for the hybrid (dense + lexical) vector query.

Why: dense embeddings miss exact words (names, dates, numbers, rare terms) that a keyword match finds; on
the REALTALK dev set BM25 beat dense on temporal questions. The index stores one sparse vector per point
under the name ``lexical`` with the IDF modifier, so the engine computes the IDF part of BM25 over the
points themselves; this module supplies only the term-frequency part.

Pure and deterministic, so the embedding service (documents) and the context assembler (queries) produce
the same term ids in any process, on any machine, in any release:

- tokens: ``mnemo/shared/analyzer.py`` (NFKC, case folding, Latin accents stripped, character bigrams for CJK,
  Thai and other scripts without spaces, the English stop list and light stemmer on ASCII words only), so
  "hiking" finds "hiked" and a search for ``玄天宗`` finds ``然后我们去玄天宗拜访。``;
- term id: the first 4 bytes of ``blake2b(token)`` as an unsigned 32-bit integer (never Python's
  ``hash()``, which is salted per process). Collisions at 2**32 are negligible for a chat vocabulary;
- document value: BM25 term-frequency saturation with a FIXED average length (:func:`document_vector`);
- query value: 1.0 per distinct term, so the engine's score is ``sum(idf(t) * saturated_tf(t, doc))``,
  the BM25 formula, except a hiragana-only term, at ``GRAMMAR_WEIGHT`` (:func:`query_weight`); a query-side
  weight, so documents keep every term and nothing needs re-indexing; :func:`terms_vector` lets secondary
  text (recent history) add its terms at a lower weight.

Changing any of this (analyzer, hash, constants) changes stored vectors: it needs ``mnemo reindex``.
"""

from __future__ import annotations

import hashlib
from collections import Counter

from mnemo.shared.analyzer import STOP_WORDS, hiragana_only, stem, terms
from mnemo.shared.vectors.port import SparseVector

__all__ = [
    "GRAMMAR_WEIGHT",
    "STOP_WORDS",
    "document_vector",
    "query_vector",
    "query_weight",
    "stem",
    "term_id",
    "terms_vector",
    "tokens",
]

K1 = 1.2
B = 0.75
#: Fixed average document length, in tokens after stop words (see the module docstring).
AVGDL = 16.0
#: What a hiragana-only query term weighs (``mnemo.shared.analyzer.hiragana_only``: in Japanese mostly grammar, what the
#: English stop list drops). Not 0: hiragana also spells some content words (``いとこ``, cousin). Why: a question
#: such as ``…さんは今どこに住んでいますか`` otherwise matches every turn whose small talk says ``どこにも`` or
#: ``ます``, and on the multilingual set those matches pushed the evidence that the dense side ranked 3rd out
#: of the top 10 (docs/benchmarks.md, ``make bench-multilingual``).
GRAMMAR_WEIGHT = 0.3


def tokens(text: str) -> list[str]:
    """The lexical terms of ``text`` (``mnemo/shared/analyzer.py``): the same for documents and queries."""
    return terms(text)


def term_id(token: str) -> int:
    """Stable 32-bit id of a token (the same in every process and release)."""
    return int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=4).digest(), "big")


def _by_id(weights: dict[int, float]) -> SparseVector:
    ids = sorted(weights)
    return SparseVector(ids, [weights[i] for i in ids])


def document_vector(text: str) -> SparseVector:
    """BM25-saturated term frequencies of ``text`` (empty when it has no words).

    ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avgdl))`` with ``k1 = 1.2``, ``b = 0.75`` and a FIXED
    ``avgdl = 16`` tokens (about a chat message after stop words): the true corpus average is per tenant and
    moves over time, and a vector written today must not need rewriting tomorrow, so the length
    normalisation is against a constant.
    """
    toks = tokens(text)
    norm = K1 * (1 - B + B * len(toks) / AVGDL)
    weights: dict[int, float] = {}
    for tok, tf in Counter(toks).items():
        tid = term_id(tok)
        weights[tid] = weights.get(tid, 0.0) + tf * (K1 + 1) / (tf + norm)  # a hash collision adds up
    return _by_id(weights)


def query_weight(term: str) -> float:
    """A query term's weight: ``GRAMMAR_WEIGHT`` for a hiragana-only term, 1 for the others."""
    return GRAMMAR_WEIGHT if hiragana_only(term) else 1.0


def query_vector(text: str) -> SparseVector:
    """Each distinct term of ``text`` at its :func:`query_weight`; the index multiplies in the IDF (empty when
    no words)."""
    return terms_vector({t: query_weight(t) for t in tokens(text)})


def terms_vector(weights: dict[str, float]) -> SparseVector:
    """A query vector from terms already made by :func:`tokens` and their weights (those <= 0 are left out)."""
    out: dict[int, float] = {}
    for term, weight in weights.items():
        if weight > 0:
            tid = term_id(term)
            out[tid] = max(out.get(tid, 0.0), weight)
    return _by_id(out)
