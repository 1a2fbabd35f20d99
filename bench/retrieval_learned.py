"""`python -m bench.retrieval_learned`: would a ranker learned from the ranking's own features beat it? (issue 30)

Offline, on the same pool and ranking as ``bench.retrieval_ablation`` (its functions, its cached vectors): for
every question the full system's pool of ``--pool`` candidates ranked by ``rank_candidates``, one row of 15
features per candidate (the system's relevance, its rank, the fused rank, the dense cosine raw and standardised
in the pool, the lexical score and whether it matched, the turn's length, the best neighbour's relevance and
cosine, how near a first-5 hit it was written, the speaker named in the question, the turn asking a question),
labelled by whether it is an evidence turn. A logistic regression (numpy, balanced classes) is trained on one
fold's chats and scores the other's (fold 0: the 1st, 3rd, ... chats), and recall@10/20/40 is compared with the
system's on the same questions. With ``lightgbm`` importable (not a dependency: install it aside for the
measurement), LambdaMART rows too. Measured 2026-11-28: +0.009 / +0.008 R@10, not built (docs/benchmarks.md).
Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

import bench.retrieval_ablation as ablation
import mnemo.services.context_assembler.search.ranking as ranking
from bench.retrieval import DEFAULT_DATA, Chat, load_chats
from bench.retrieval_report import CATEGORY_NAMES, recall

Row = dict[str, Any]


def question_rows(chats: list[Chat], vectors: ablation.Vectors, history: int, pool: int) -> list[Row]:
    """One entry per question with evidence: its candidates' keys in the system's order, features, labels."""
    lexical = ablation.sparse_scores(chats)
    out: list[Row] = []
    for number, chat in enumerate(chats):
        docs, _, stripped = vectors[chat.key]
        n = len(chat.turns) - history
        index = {t.dia_id: i for i, t in enumerate(chat.turns)}
        for q, qv in zip(chat.questions, stripped, strict=True):
            if not q.evidence:
                continue
            dense, lex = docs[:n] @ qv, lexical(chat, ablation.search_text(chat, q.text, history))[:n]
            order = ablation.fused_pool(dense, lex, pool)
            cands = [
                ranking.Candidate(t.dia_id, r, i, t.created_at.timestamp(), t.speaker, t.text)
                for r, i in enumerate(order, start=1)
                for t in (chat.turns[i],)
            ]
            scored = ranking.rank_candidates(q.text, cands, pool, now=0.0)
            features = _features(chat, q.text, scored, index, order, dense, lex, n)
            evidence = set(q.evidence)
            out.append({
                "chat": number, "kind": CATEGORY_NAMES.get(q.category, "?"), "evidence": list(q.evidence),
                "keys": [k for k, _ in scored], "X": features,
                "y": np.asarray([k in evidence for k, _ in scored], float),
            })  # fmt: skip
    return out


def _features(
    chat: Chat,
    question: str,
    scored: list[tuple[str, float]],
    index: dict[str, int],
    order: list[int],
    dense: np.ndarray,
    lex: np.ndarray,
    n: int,
) -> np.ndarray:
    score_of = dict(scored)
    pool_rank = {i: r for r, i in enumerate(order, start=1)}
    first = [chat.turns[index[k]].created_at.timestamp() for k, _ in scored[:5]]
    best_lexical = float(lex[order].max()) or 1.0
    mean, std = float(dense[order].mean()), float(dense[order].std()) + 1e-6
    asked = question.lower()
    rows = []
    for rank, (key, score) in enumerate(scored, start=1):
        i = index[key]
        turn = chat.turns[i]
        near = [j for j in (i - 1, i + 1) if 0 <= j < n]
        hours = min(abs(turn.created_at.timestamp() - t) for t in first) / 3600
        rows.append([
            score, 1 / rank, np.log(rank), dense[i], (dense[i] - mean) / std, lex[i] / best_lexical, lex[i] > 0,
            np.log1p(len(turn.text.split())),
            max((score_of.get(chat.turns[j].dia_id, 0.0) for j in near), default=0.0),
            max((float(dense[j]) for j in near), default=0.0),
            hours < 3, np.log1p(hours), bool(turn.speaker) and turn.speaker.lower() in asked,
            turn.text.strip().endswith("?"), 1 / pool_rank[i],
        ])  # fmt: skip
    return np.asarray(rows, float)


def logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, steps: int = 600, rate: float = 0.5) -> np.ndarray:
    """Weights (bias last) of a logistic regression on standardised ``x``, the classes weighed equally."""
    x = np.hstack([x, np.ones((len(x), 1))])
    weight = np.where(y > 0, 0.5 / y.mean(), 0.5 / (1 - y.mean()))
    w = np.zeros(x.shape[1])
    for _ in range(steps):
        g = (1 / (1 + np.exp(-(x @ w))) - y) * weight
        w -= rate * (x.T @ g / len(y) + l2 * np.r_[w[:-1], 0.0])
    return w


def recalls(rows: list[Row], scores: list[np.ndarray] | None) -> dict[int, float]:
    """Mean recall@k of ``rows`` in the system's order (None) or by ``scores`` (best first)."""
    out = {}
    for k in (10, 20, 40):
        found = []
        for r, row in enumerate(rows):
            keys = row["keys"] if scores is None else [row["keys"][i] for i in np.argsort(-scores[r], kind="stable")]
            found.append(recall(row["evidence"], keys[:k]))
        out[k] = round(float(np.mean(found)), 4)
    return out


def fold_result(rows: list[Row], fold: int) -> dict[str, Any]:
    train = [r for r in rows if r["chat"] % 2 != fold]
    test = [r for r in rows if r["chat"] % 2 == fold]
    x = np.vstack([r["X"] for r in train])
    mean, std = x.mean(0), x.std(0) + 1e-9
    w = logistic((x - mean) / std, np.concatenate([r["y"] for r in train]))
    learned = [np.hstack([(r["X"] - mean) / std, np.ones((len(r["X"]), 1))]) @ w for r in test]
    result: dict[str, Any] = {"questions": len(test), "system": recalls(test, None), "logistic": recalls(test, learned)}
    try:
        import lightgbm  # type: ignore[import-not-found]  # measurement only, not a dependency
    except ImportError:
        return result
    for leaves, trees in ((4, 100), (7, 150), (15, 300)):
        params = {"objective": "lambdarank", "verbose": -1, "lambdarank_truncation_level": 20, "num_threads": 1,
                  "num_leaves": leaves, "learning_rate": 0.05 if trees < 300 else 0.03,
                  "min_child_samples": {4: 200, 7: 50, 15: 100}[leaves]}  # fmt: skip
        data = lightgbm.Dataset(
            x, np.concatenate([r["y"] for r in train]).astype(int), group=[len(r["y"]) for r in train]
        )
        model = lightgbm.train(params, data, num_boost_round=trees)
        result[f"lambdamart {leaves}x{trees}"] = recalls(test, [model.predict(r["X"]) for r in test])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit-chats", type=int)
    parser.add_argument("--history-limit", type=int, default=4)
    parser.add_argument("--pool", type=int, default=120)
    parser.add_argument("--vectors", type=Path, help="the ablation's cached vectors (made if missing)")
    args = parser.parse_args()
    chats = load_chats(args.data, args.limit_chats)
    rows = question_rows(
        chats, ablation.embed_chats(chats, args.history_limit, args.vectors), args.history_limit, args.pool
    )
    result = {f"fold {fold}": fold_result(rows, fold) for fold in (0, 1)}
    for fold, figures in result.items():
        for row, value in figures.items():
            print(f"{fold} {row}: {value}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
