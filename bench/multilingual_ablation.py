"""`python -m bench.multilingual_ablation`: the ranking levers on the multilingual set, offline, per script.

``make bench-multilingual`` replays the Chinese, Japanese, Korean and Russian chats of
``bench/multilingual_data.py`` through the whole stack (half an hour on a loaded machine); this replays only
the retrieval arithmetic of ``bench.retrieval_ablation`` on them (same sparse vectors, DBSF fusion and
``ranking.py`` in process) with the multilingual model's vectors, each chat (one per script) its own corpus, at
the pool the benchmark's service searches (``retrieved_limit`` 40, three times that). Use it to see which lever
moves a script's recall; the full benchmark gives the system's figure.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from bench.multilingual_data import build_chats
from bench.retrieval_ablation import embed_chats, levers, run
from mnemo.shared.embedders.multilingual import MultilingualEmbedder

ROWS: list[tuple[str, dict[str, Any]]] = [
    ("full system", {}),
    ("  without the second hop", {"HOP_WEIGHT": 0.0}),
    ("  second hop lowering the turns it does not reach (before 2026-11-27)", {"HOP_NEVER_LOWERS": False}),
    ("  without aliases or the split", {"USE_ALIASES": False, "SPLIT_NAMED": False}),
    ("  questions at full weight", {"QUESTION_WEIGHT": 1.0}),
    ("  without the turns' own dates", {"TURN_DATES": False}),
    ("  misspelt names not recognised", {"MIN_RATIO": 1.01}),
    ("  rank smoothing fixed whatever the pool", {"RANK_K_PER_CANDIDATE": 0.0}),
    ("  neighbours by own words 0.5", {"NEIGHBOUR_OWN": 0.5}),
]


def main(people: int, history: int, pool: int, only: list[str], cache: Path | None) -> None:
    chats = build_chats(people)
    model = MultilingualEmbedder()

    def embed(texts: list[str]) -> np.ndarray:
        vectors = np.asarray(model.embed_sync(texts), dtype=np.float32)
        unit: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        return unit

    vectors = embed_chats(chats, history, cache, embed)
    print(f"{len(chats)} chats, {sum(len(c.questions) for c in chats)} questions; pool {pool}; R@5 / R@10 per chat")
    for name, values in ROWS:
        if only and name.strip() != "full system" and not any(o in name for o in only):
            continue
        with levers(**values):
            found = {c.key: run([c], vectors, history, pool) for c in chats}
        print(f"{name:<72}" + "   ".join(f"{k} {r['recall@5']:.3f} / {r['recall@10']:.3f}" for k, r in found.items()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--people", type=int, default=30, help="people per language, as make bench-multilingual")
    parser.add_argument("--history-limit", type=int, default=4)
    parser.add_argument("--pool", type=int, default=120)
    parser.add_argument("--rows", nargs="*", default=[], help="only the rows whose name holds one of these")
    parser.add_argument("--vectors", type=Path, default=None, help="an .npz cache of the chats' vectors (made once)")
    args = parser.parse_args()
    main(args.people, args.history_limit, args.pool, args.rows, args.vectors)
