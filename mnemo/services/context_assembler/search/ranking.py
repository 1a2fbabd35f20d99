"""Pure ranking of retrieved messages: which of the hybrid search's candidates are shown, and their relevance.

The vector query (``search.py``) returns a pool of candidates in the order of its score fusion (DBSF)
of a dense and a lexical search, filtered inside the query (tenant, conversation, what the speaking bot
witnessed, not in the history window). The pool is several times the slots; this module re-ranks it with
what the index alone does not know (the conversation's neighbours, who and when the query names,
near-duplicates, diversity), then cuts it to the slots: see :func:`rank_candidates` for each lever. Each lever
was measured on the REALTALK dev set (``make bench-retrieval``; the README lists its gain).

The relevance returned is in [0, 1]: the combined score divided by its maximum possible value (the first of
the fused list, by the named author, in the referred time), so it is comparable
across queries and monotone with the order the items are packed in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from mnemo.services.context_assembler.search import sessions
from mnemo.services.context_assembler.search.aliases import aliases, named_by_alias
from mnemo.services.context_assembler.search.hops import entity_terms, hop_scores
from mnemo.services.context_assembler.search.levers import DEFAULT_LEVERS, RankLevers
from mnemo.services.context_assembler.search.names import spelled_names
from mnemo.services.context_assembler.search.text_cache import per_text
from mnemo.services.context_assembler.search.timerefs import TimeWindow, referred_window
from mnemo.services.context_assembler.search.when import TimeLevers, asks_when, parsed_window, states_time
from mnemo.shared.sparse import tokens

__all__ = [
    "DUPLICATE_JACCARD",
    "HOP_NEVER_LOWERS",
    "HOP_WEIGHT",
    "MIN_RELEVANCE",
    "MMR_LAMBDA",
    "NEIGHBOUR_OWN",
    "NEIGHBOUR_WEIGHT",
    "PARSE_DATES",
    "PARTICIPANT_BOOST",
    "QUESTION_WEIGHT",
    "RANK_K",
    "RANK_K_PER_CANDIDATE",
    "SPLIT_NAMED",
    "TIME_BOOST",
    "TURN_DATES",
    "USE_ALIASES",
    "WHEN_BOOST",
    "Candidate",
    "TimeWindow",
    "hopped",
    "jaccard",
    "mmr",
    "named_participant",
    "named_participants",
    "near_duplicate",
    "neighbour_scores",
    "rank_base",
    "rank_candidates",
    "referred_window",
]

#: Smoothing of the fused rank: rank 1 -> 1.0, rank 20 -> 0.54, rank 60 -> 0.26.
RANK_K = 20
#: The smoothing grows with the pool: ``K = max(RANK_K, RANK_K_PER_CANDIDATE * candidates)`` (0: RANK_K
#: whatever the pool). A deeper pool holds more of the evidence, but with a fixed K the prior falls so fast
#: over its length that the other levers (neighbours, the named person, the second hop) cannot lift what it
#: ranks past 40: a third of the pool keeps the prior's shape at any depth (K 20 at 60 candidates, 40 at the
#: 120 of ``make bench-retrieval``; the service's default 18 keeps 20). Whole REALTALK set offline at a pool of
#: 120: R@10 0.623 -> 0.627, multi-hop 0.438 -> 0.451 (issue 30, docs/benchmarks.md, Retrieval levers).
RANK_K_PER_CANDIDATE = 1 / 3
NEIGHBOUR_WEIGHT = 0.7
#: Neighbours up to 3 messages away count, at 0.6 ** (distance - 1) of their score.
NEIGHBOUR_WIDTH = 3
NEIGHBOUR_DECAY = 0.6
#: How much a neighbour's lift depends on the turn's own match: the lift is scaled by ``1 - NEIGHBOUR_OWN +
#: NEIGHBOUR_OWN * own``, ``own`` the share of the query's content words the turn holds (0: every turn lifted
#: alike). A turn that already says part of what is asked, beside a strong match, is likelier the rest of the
#: answer than a turn that only sits there (lever (b) of issue 30).
NEIGHBOUR_OWN = 0.0
#: What ``own`` is: "words" (the share above) or "score" (the turn's own base score, in [0, 1]).
NEIGHBOUR_OWN_BY = "words"
PARTICIPANT_BOOST = 1.0
TIME_BOOST = 0.5
DUPLICATE_JACCARD = 0.9
#: 1.0 turns diversity off. In the offline ablation (``bench/retrieval_ablation.py``) lambda 0.8 moved R@5 / R@10
#: / R@20 by +0.002 / +0.004 / -0.001, within noise: evidence turns of one question are often alike, so
#: diversity buys little here; it stays available, neutral by default.
MMR_LAMBDA = 1.0
MIN_RELEVANCE = 0.02
#: A candidate that only asks (ends with a question mark) weighs this much of its score: it rarely holds the
#: answer, the turn after it does (and the neighbour lever lifts that one by the question's own score).
QUESTION_WEIGHT = 0.9
#: Names the conversation calls a participant by ("Kate" for the author "Emi", ``aliases.py``) count as theirs
#: when the query names who it is about (the default of ``rank_candidates``' ``use_aliases``).
USE_ALIASES = True
#: A query about two or more participants ("What do Kate and Elise both like?") is ranked once per person, that
#: person's messages boosted, and the rankings interleaved (the default of ``rank_candidates``' ``split_named``).
SPLIT_NAMED = True
#: A turn whose own time expression ("yesterday", "last week"), resolved against the day it was written, falls
#: in the time the query names counts as in that time (``when.py``), as a turn written then does.
TURN_DATES = True
#: A query that asks when ("When did Kate start reading Pachinko?") lifts the turns that say when (``when.py``)
#: by this fraction (0: off; the default of ``rank_candidates``' ``when_boost``).
WHEN_BOOST = 0.0
#: Expressions the fixed patterns do not know resolved with ``dateparser`` (``when.parsed_window``: tens of
#: milliseconds a call; the default of ``rank_candidates``' ``parse_dates``).
PARSE_DATES = False
#: The second hop inside the pool (``hops.py``): the weight of what a personalized PageRank from the first hits
#: over the pool's shared terms brings a candidate, against its base score (``hopped``; 0: off). Offline on the
#: whole REALTALK dev set 0.4 measured best (docs/benchmarks.md, Retrieval levers).
HOP_WEIGHT = 0.4
#: Whether the hop's graph links turns by their name-like words only (``hops.entity_terms``) or by all terms.
HOP_ENTITIES = False
#: Whether the second hop only ever raises a score (``hopped``): then it lifts no turn above the fused list's first.
HOP_NEVER_LOWERS = True


@dataclass(frozen=True)
class Candidate:
    """A retrieved message as the ranking sees it.

    ``rank`` is its 1-based place in the fused list; ``position`` its index in the conversation (None when
    unknown); ``created_at`` epoch seconds; ``author`` and ``text`` come from the read model.
    """

    key: str
    rank: int
    position: int | None = None
    created_at: float | None = None
    author: str = ""
    text: str = ""


def rank_base(rank: int, k: float = RANK_K) -> float:
    """``(k + 1) / (k + rank)``: 1.0 for the first of the fused list, decreasing smoothly."""
    return (k + 1) / (k + max(rank, 1))


def neighbour_scores(
    base: Mapping[str, float],
    positions: Mapping[str, int | None],
    width: int = NEIGHBOUR_WIDTH,
    decay: float = NEIGHBOUR_DECAY,
) -> dict[str, float]:
    """For each key, the best base score of the candidates up to ``width`` positions away, the one at
    distance ``d`` counting ``decay ** (d - 1)`` of its score (the adjacent ones count fully)."""
    at: dict[int, float] = {}
    for key, pos in positions.items():
        if pos is not None:
            at[pos] = max(at.get(pos, 0.0), base.get(key, 0.0))
    out: dict[str, float] = {}
    for key, pos in positions.items():
        best = 0.0
        if pos is not None:
            for d in range(1, width + 1):
                best = max(best, decay ** (d - 1) * max(at.get(pos - d, 0.0), at.get(pos + d, 0.0)))
        out[key] = best
    return out


_WORD = re.compile(r"\w+", re.UNICODE)


def _first_name(author: str) -> str:
    words = _WORD.findall(author.lower())
    return words[0] if words else ""


def named_participants(query: str, authors: Sequence[str], known: Mapping[str, str] | None = None) -> list[str]:
    """The authors (as written) whose first name the query contains as a word, or one of their ``known``
    aliases (``aliases.py``), one per first name, in sorted order.

    Names shorter than 3 letters are ignored (too likely to be ordinary words); a misspelt name counts
    (``names.spelled_names``: "Muhammad" for the author "Muhhamed").
    """
    firsts_of = {_first_name(a) for a in authors}
    words = set(spelled_names(query, {n for n in firsts_of if len(n) >= 3}).values())
    named = {a for a in authors if len(name := _first_name(a)) >= 3 and name in words}
    named |= {a for a in named_by_alias(query, dict(known or {})) if a in authors}
    by_first: dict[str, str] = {}
    for a in sorted(named):
        by_first.setdefault(_first_name(a), a)
    return sorted(by_first.values())


def named_participant(query: str, authors: Sequence[str], known: Mapping[str, str] | None = None) -> str | None:
    """The one author (as written) the query names (see :func:`named_participants`), else None: two named
    authors ("Kate and Elise") or none give None, the boost is only for a query about one person."""
    named = named_participants(query, authors, known)
    return named[0] if len(named) == 1 else None


#: Texts whose word sets are remembered: a conversation's next request ranks mostly the same candidates again,
#: and stemming them was the ranking's largest cost (issue 26). Keyed by the text alone, the set a pure function
#: of it; least recently used dropped first.
WORD_SETS = 8192


@per_text(WORD_SETS)
def word_set(text: str) -> frozenset[str]:
    """Stemmed content words (``mnemo/shared/sparse.py`` tokens): what near-duplicate and diversity compare."""
    return frozenset(tokens(text))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def near_duplicate(words: frozenset[str], kept: Sequence[frozenset[str]], threshold: float = DUPLICATE_JACCARD) -> bool:
    """Whether ``words`` is nearly one of ``kept`` (an empty text duplicates only another empty one)."""
    return any(jaccard(words, other) >= threshold for other in kept)


def mmr(
    relevance: Mapping[str, float],
    similarity: Callable[[str, str], float],
    limit: int,
    lam: float = MMR_LAMBDA,
) -> list[str]:
    """Maximal marginal relevance: repeatedly take the key maximising ``lam * rel - (1 - lam) * max sim`` to
    the keys already taken (ties: the better relevance, then the earlier key). ``lam = 1`` is plain order."""
    order = sorted(relevance, key=lambda k: -relevance[k])
    if lam >= 1.0:
        return order[:limit]
    taken: list[str] = []
    rest = list(order)
    while rest and len(taken) < limit:
        best = max(
            rest,
            key=lambda k: lam * relevance[k] - (1 - lam) * max((similarity(k, t) for t in taken), default=0.0),
        )
        taken.append(best)
        rest.remove(best)
    return taken


def rank_candidates(
    query: str,
    candidates: Sequence[Candidate],
    limit: int,
    *,
    now: float,
    rerank: Mapping[str, float] | None = None,
    levers: RankLevers = DEFAULT_LEVERS,
) -> list[tuple[str, float]]:
    """The ``limit`` best candidates as ``(key, relevance)``, best first, relevance in [0, 1].

    1. Fused order (:func:`rank_base`): a candidate's base score is ``(K + 1) / (K + rank)`` of its place in the
       fused list (1.0 for the first), not its dense cosine: the fusion is what found it.
    2. Conversation neighbours (:func:`neighbour_scores`): a message right before or after a strong candidate is
       often part of the same exchange ("Where did you go?" / "To Miami!"), so each candidate is lifted
       ``NEIGHBOUR_WEIGHT`` of the way towards the best base score of its neighbours in the pool (up to
       ``NEIGHBOUR_WIDTH`` positions away, decaying with the distance); never past it, so a run of weak
       neighbours cannot overtake the best match.
    3. Named participant (:func:`named_participant`): when the query names exactly one author of the candidates
       ("What are Kate's hobbies?"), that author's messages are boosted by ``PARTICIPANT_BOOST``: what a
       person said about themselves is the likeliest evidence about them.
    4. Time the query refers to (:func:`referred_window`, ``timerefs.py``): "on 29 Dec
       2023", "in May", "yesterday", "last week" (relative to ``now``) give a window; candidates written in it
       are boosted by ``TIME_BOOST``.
    5. Near-duplicate removal (:func:`near_duplicate`): a candidate whose words are nearly those of a better one
       (Jaccard of stemmed content words at least ``DUPLICATE_JACCARD``) is dropped: it would spend a slot and
       tokens on nothing new.
    6. Diversity (:func:`mmr`): maximal marginal relevance over the word sets, ``MMR_LAMBDA`` of relevance
       against ``1 - MMR_LAMBDA`` of similarity to what is already taken.
    7. Questions (``QUESTION_WEIGHT``): a candidate that ends with a question mark weighs 0.9 of its score
       (applied with the neighbours, before the boosts): "What about you, Kate?" shares the question's words
       but the turn after it holds the answer, and that turn is lifted by the question's full score.
    8. Minimum relevance: candidates under ``MIN_RELEVANCE`` are never shown.
    9. Aliases (``use_aliases``, ``aliases.py``): a name the candidates address an author by ("Hey Kate!" to
       Emi) names that author in step 3.
    10. Several people named (``split_named``): the pool is ranked once per named author, that author
        boosted as in step 3, and the rankings are interleaved (one from each in turn, duplicates skipped), so
        a question about two people ("What do Kate and Elise both like?") sees the best of each; the
        relevance is kept non-increasing along that order.
    11. Time in turns (``when.py``): a turn whose own expression ("yesterday"), resolved against the day it was
        written, falls in the referred time counts as in it (``TURN_DATES``, step 4); a query that asks when
        lifts the turns that say when by ``when_boost``; with ``parse_dates`` the query's time expressions the
        fixed patterns miss ("last Saturday", "вчера") are resolved by ``dateparser``, and so are the turns'.

    12. Second hop (``hop_weight``, ``hops.py``): a personalized PageRank from the first hits over the terms
        the pool's candidates share (the question's own left out) lifts the turns the first hits point to
        but the question's words do not reach: each base score (step 1) becomes the share
        ``(base + hop_weight * hop) / (1 + hop_weight)`` when that is higher (:func:`hopped`): the hop raises
        turns, never lowers one it does not reach, so it lifts no turn above the first of the fused list (a
        turn holding the question's rare word was outranked by turns sharing common words before, issue 30).

    ``levers`` (``levers.py``) holds ``use_aliases``, ``split_named``, ``when_boost``, ``parse_dates`` and
    ``hop_weight``; one left None is ``USE_ALIASES``, ``SPLIT_NAMED``, ``WHEN_BOOST``, ``PARSE_DATES`` or
    ``HOP_WEIGHT`` (read at call time).
    ``rerank`` (a re-ranking model's score in [0, 1] per key, when one is configured) replaces the fused
    rank as the base score of the keys it covers. ``now`` (epoch seconds) anchors relative times in the
    query. Duplicated keys keep their first (best) occurrence.
    """
    if limit <= 0 or not candidates:
        return []
    unique: dict[str, Candidate] = {}
    for c in candidates:
        unique.setdefault(c.key, c)
    # RANK_K read here, not as a default argument: a default is bound once at import, so changing the module
    # constant (the offline ablation's lever) would not change anything.
    smoothing = max(RANK_K, RANK_K_PER_CANDIDATE * len(unique))
    base = {k: rank_base(c.rank, smoothing) for k, c in unique.items()}
    if rerank:
        base |= {k: float(v) for k, v in rerank.items() if k in base}
    words = {k: word_set(c.text) for k, c in unique.items()}
    hop_w = _or(levers.hop_weight, HOP_WEIGHT)
    if hop_w > 0:
        graph = {k: entity_terms(c.text) for k, c in unique.items()} if HOP_ENTITIES else words
        hop = hop_scores(graph, base, frozenset(tokens(query)))
        base = {k: hopped(b, hop[k], hop_w) for k, b in base.items()}
    if sessions.SESSION_WEIGHT > 0:  # off by default (sessions.py): no times gathered, no copy per request
        base = sessions.session_lifted(base, {k: c.created_at for k, c in unique.items()})
    near = neighbour_scores(base, {k: c.position for k, c in unique.items()}, NEIGHBOUR_WIDTH, NEIGHBOUR_DECAY)
    if NEIGHBOUR_OWN > 0:
        lift = own_share(word_set(query), words) if NEIGHBOUR_OWN_BY == "words" else base
        near = {k: base[k] + (1 - NEIGHBOUR_OWN + NEIGHBOUR_OWN * lift[k]) * (n - base[k]) for k, n in near.items()}
    authors = sorted({c.author for c in unique.values() if c.author})
    known = aliases((c.author, c.text) for c in unique.values()) if _or(levers.use_aliases, USE_ALIASES) else {}
    named = named_participants(query, authors, known)
    parse = _or(levers.parse_dates, PARSE_DATES)
    window = referred_window(query, now) or (parsed_window(query, now) if parse and states_time(query) else None)
    boost = _or(levers.when_boost, WHEN_BOOST)
    time = TimeLevers(window, TIME_BOOST, TURN_DATES, parse, boost if boost > 0 and asks_when(query) else 0.0)
    if len(named) > 1 and _or(levers.split_named, SPLIT_NAMED):
        relevance = _interleaved([_relevance(unique, base, near, one, time) for one in named])
    else:
        relevance = _relevance(unique, base, near, named[0] if len(named) == 1 else None, time)
    kept: dict[str, float] = {}
    for k in relevance:
        if relevance[k] < MIN_RELEVANCE:
            break
        if unique[k].text and near_duplicate(words[k], [words[o] for o in kept if unique[o].text], DUPLICATE_JACCARD):
            continue
        kept[k] = relevance[k]
    order = mmr(kept, lambda a, b: jaccard(words[a], words[b]), limit, MMR_LAMBDA)
    return [(k, kept[k]) for k in order]


def own_share(asked: frozenset[str], words: Mapping[str, frozenset[str]]) -> dict[str, float]:
    """Each turn's share of the query's content words (``asked``; 0 for every turn when it has none)."""
    if not asked:
        return dict.fromkeys(words, 0.0)
    return {k: len(w & asked) / len(asked) for k, w in words.items()}


def hopped(base: float, hop: float, weight: float) -> float:
    """A base score after the second hop: ``(base + weight * hop) / (1 + weight)`` when that is higher, else
    ``base`` (``HOP_NEVER_LOWERS``; without it the share alone). The share alone lowered every turn the walk
    does not reach, and a turn holding the question's one rare word is such a turn (it shares that word with
    no other): a cluster of turns sharing common words with each other then outranked it."""
    share = (base + weight * hop) / (1 + weight)
    return max(base, share) if HOP_NEVER_LOWERS else share


_L = TypeVar("_L", bool, float)


def _or(given: _L | None, default: _L) -> _L:
    """A lever as given, or the module's constant when it was left None."""
    return default if given is None else given


def _relevance(
    unique: Mapping[str, Candidate],
    base: Mapping[str, float],
    near: Mapping[str, float],
    named: str | None,
    time: TimeLevers,
) -> dict[str, float]:
    """Each candidate's relevance in [0, 1] with ``named``'s messages boosted, best first (steps 1-4, 7, 11)."""
    best_possible = (1 + (PARTICIPANT_BOOST if named else 0.0)) * time.best()
    relevance: dict[str, float] = {}
    for k, c in unique.items():
        score = base[k] + NEIGHBOUR_WEIGHT * max(0.0, near[k] - base[k])
        if c.text.rstrip().endswith(("?", "？")):
            score *= QUESTION_WEIGHT
        if named is not None and c.author == named:
            score *= 1 + PARTICIPANT_BOOST
        score *= time.factor(c)
        relevance[k] = min(1.0, score / best_possible)
    return dict(sorted(relevance.items(), key=lambda kv: -kv[1]))


def _interleaved(rankings: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """One key from each ranking (best first) in turn, duplicates skipped; relevance never rising."""
    out: dict[str, float] = {}
    lists = [list(r.items()) for r in rankings]
    ceiling = 1.0
    for i in range(max(map(len, lists), default=0)):
        for ranked in lists:
            if i < len(ranked) and ranked[i][0] not in out:
                ceiling = min(ceiling, ranked[i][1])
                out[ranked[i][0]] = ceiling
    return out
