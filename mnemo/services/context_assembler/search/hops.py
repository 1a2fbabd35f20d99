"""Multi-hop expansion inside the retrieved pool: a personalized PageRank over the pool's turn-term graph.

A question whose answer is spread over several turns ("What did Kate do after her trip to Miami?") finds the
turn that names the trip and misses the one that says what came next: that one shares words with the first
turn ("Miami", "beach", a friend's name), not with the question. SmartSearch (arXiv 2603.15599) seeds a
second search with the first hits' entities; here the second hop runs over the pool the hybrid search already
returned (on the REALTALK dev set the pool of 60 holds 0.765 of the evidence, the first 10 0.626), so it costs
no query: a random walk with restart at the first hits (``SEEDS``, in proportion to their score) on the
bipartite graph of the pool's turns and their terms. A turn reached through rare words shared with several
strong hits gains more than one sharing common words with one weak hit.

- terms: ``mnemo.shared.sparse`` tokens (stemmed content words, character bigrams for scripts without
  spaces), so every language the lexical search knows works, with no model; the question's own terms are
  left out (the first search matched them) and so is a term of a single turn (it links nothing);
- edge weight: a term's inverse frequency in the pool, ``ln(1 + n / df)``;
- ``ITERATIONS`` steps of ``p = RESTART * seed + (1 - RESTART) * walk(p)``, turn -> term -> turn.

Why not a graph built at ingest over the whole conversation: it needs a read model and its upkeep on every
message, edit and erasure, and reaching turns outside the filtered search needs another read; the pool is
already filtered (tenant, conversation, what the bot witnessed), so isolation holds by construction.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping, Set

import numpy as np

from mnemo.shared.sparse import tokens

__all__ = ["ITERATIONS", "RESTART", "SEEDS", "WALK_ONLY", "entity_terms", "hop_scores"]

_WORD = re.compile(r"\w+", re.UNICODE)

#: The walk restarts at the seeds with this probability at each step.
RESTART = 0.5
ITERATIONS = 5
#: The first hits (by base score) that seed the walk.
SEEDS = 10
#: Whether a turn's score is only what the walk brings it (the restart mass at the seeds left out), so the
#: first hits are not lifted again for being seeds (offline R@10 +0.007 with it, +0.002 without: measured).
WALK_ONLY = True


def entity_terms(text: str) -> frozenset[str]:
    """The terms of ``text``'s name-like words: a capitalised word not opening a sentence, a word with a digit,
    and every word of a script without case (CJK, Thai...: there nothing marks a name, so all its terms)."""
    out: set[str] = set()
    for m in _WORD.finditer(text):
        word = m.group()
        opens = not text[: m.start()].rstrip() or text[: m.start()].rstrip()[-1] in ".!?\n"
        caseless = word.lower() == word.upper() and not word.isdigit()
        if caseless or any(ch.isdigit() for ch in word) or (word[0].isupper() and not opens):
            out.update(tokens(word))
    return frozenset(out)


def hop_scores(
    words: Mapping[str, Set[str]],
    base: Mapping[str, float],
    asked: Set[str] = frozenset(),
    seeds: int | None = None,
    restart: float | None = None,
    iterations: int | None = None,
) -> dict[str, float]:
    """Each turn's personalized PageRank in the pool's turn-term graph, scaled so the best turn has 1.0 (all 0
    when nothing links). ``words``: each turn's terms; ``base``: each turn's score, the ``seeds`` best of which
    seed the walk in proportion to it; ``asked``: the question's terms, left out of the graph. ``seeds``,
    ``restart`` and ``iterations`` default to ``SEEDS``, ``RESTART`` and ``ITERATIONS`` (read at call time)."""
    seeds = SEEDS if seeds is None else seeds
    restart = RESTART if restart is None else restart
    iterations = ITERATIONS if iterations is None else iterations
    keys = list(words)
    df: dict[str, int] = defaultdict(int)
    for terms in words.values():
        for t in terms:
            if t not in asked:
                df[t] += 1
    column = {t: i for i, t in enumerate(t for t, f in df.items() if f > 1)}
    graph = np.zeros((len(keys), len(column)))
    for row, k in enumerate(keys):
        for t in words[k]:
            if t in column:
                graph[row, column[t]] = math.log(1 + len(keys) / df[t])
    linked = graph.sum(axis=1) > 0
    score = np.array([base.get(k, 0.0) if linked[i] else 0.0 for i, k in enumerate(keys)])
    first = np.argsort(-score, kind="stable")[:seeds]
    seed = np.zeros(len(keys))
    seed[first] = score[first]
    if seed.sum() <= 0:
        return dict.fromkeys(words, 0.0)
    seed /= seed.sum()
    # Each step: every turn spreads its mass over its terms by weight, every term over its turns by weight (rows
    # without edges spread nothing). Elementwise products and sums, not a matrix product: numpy hands those to
    # BLAS, whose threads contend with the service's and made this several times slower in wall time.
    to_terms = graph / np.maximum(graph.sum(axis=1, keepdims=True), 1e-12)
    to_turns = graph / np.maximum(graph.sum(axis=0, keepdims=True), 1e-12)
    p = seed.copy()
    for _ in range(iterations):
        on_terms = (to_terms * p[:, None]).sum(axis=0)
        p = restart * seed + (1 - restart) * (to_turns * on_terms).sum(axis=1)
    if WALK_ONLY:
        p = p - restart * seed
    top = float(p.max())
    return {k: (float(p[i]) / top if top > 0 else 0.0) for i, k in enumerate(keys)}
