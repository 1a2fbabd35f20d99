"""Baselines for `bench.retrieval`: Okapi BM25 and dense cosine over single turns, no vector database.

They are the floor the system has to beat, so they are deliberately plain and dependency-free: BM25 with the
textbook parameters (k1=1.2, b=0.75) and lowercase ``\\w+`` tokens, and brute-force cosine over the vectors of
the bundled model (the model the system itself embeds with, so the dense baseline isolates what the
system's retrieval adds on top of the same vectors). Each chat is its own corpus, as in the system, where a
query is filtered to its conversation.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

_WORD = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens; no stemming or stop words, so the baseline stays the plain reference one."""
    return _WORD.findall(text.lower())


class BM25:
    """Okapi BM25 over a fixed list of documents, ranked by exhaustive scoring (a chat has ~1,500 turns).

    IDF is the non-negative variant ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (Lucene's), so a term present in
    more than half the turns still counts a little instead of pushing a document down.
    """

    def __init__(
        self, docs: Sequence[str], k1: float = 1.2, b: float = 0.75, tokenizer: Callable[[str], list[str]] = tokenize
    ) -> None:
        self.k1 = k1
        self.b = b
        self._tokenize = tokenizer  # ``bench.multilingual`` also runs it with the system's analyzer
        self._tfs = [Counter(tokenizer(d)) for d in docs]
        self._lengths = [sum(tf.values()) for tf in self._tfs]
        n = len(docs)
        self._avg_len = (sum(self._lengths) / n) if n else 0.0
        df: Counter[str] = Counter()
        for tf in self._tfs:
            df.update(tf.keys())
        self._idf = {term: math.log(1 + (n - f + 0.5) / (f + 0.5)) for term, f in df.items()}

    def scores(self, query: str) -> list[float]:
        terms = [t for t in self._tokenize(query) if t in self._idf]
        out: list[float] = []
        for tf, length in zip(self._tfs, self._lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / self._avg_len) if self._avg_len else self.k1
            total = 0.0
            for term in terms:  # a repeated query term counts again, as in the classic formulation
                f = tf.get(term, 0)
                if f:
                    total += self._idf[term] * f * (self.k1 + 1) / (f + norm)
            out.append(total)
        return out

    def rank(self, query: str, k: int) -> list[int]:
        """Indices of the ``k`` best documents, best first (ties keep document order)."""
        return top_k(np.asarray(self.scores(query), dtype=np.float64), k)


def top_k(scores: npt.NDArray[np.floating], k: int) -> list[int]:
    order = np.argsort(-scores, kind="stable")[:k]
    return [int(i) for i in order]


def dense_rank(doc_vectors: npt.NDArray[np.float32], query_vector: npt.NDArray[np.float32], k: int) -> list[int]:
    """Brute-force cosine: the bundled model's vectors are L2-normalised, so cosine is a dot product."""
    return top_k(doc_vectors @ query_vector, k)
