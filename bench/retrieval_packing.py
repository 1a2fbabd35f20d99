"""`python -m bench.retrieval_packing out.jsonl`: packing levers replayed offline on one `make bench-retrieval` run.

``make bench-retrieval ARGS="--dump out.jsonl"`` writes each question's unbounded reply: its scored turns, its
memories and facts (score, cited turns, tokens of their line) and its history. This script packs them again
for each budget as ``assemble/packing.py`` does (history and system reserved at the tokens the run's budgeted
reply gave them, then everything scored best ``score ** SHARPNESS / tokens`` first, skipping what does not
fit) and scores what is seen as the benchmark does (memories credited with the turns they cite). The first
row is the run's own figure and the second the replay of it, so the replay's error is visible; each further
row changes one lever:

- ``memory dedup``: a memory or fact whose cited turns are all seen already is not packed (issue 30);
- ``memories x2``: memories' and facts' scores doubled before packing (scores comparable across sections);
- ``history N``: only the newest N history messages reserved (costed as a retrieved turn);
- ``sharpness 8``: the service's sharpness before 2026-11-27 (a run dumped at another sharpness than the
  service's is replayed at the service's in ``replayed``);
- ``summaries calibrated``: scores made comparable across sections (issue 30, item 2): a summary's score is
  replaced by the turn score that holds as much evidence per token, both curves fitted on the OTHER chats of
  the dump (:func:`summary_calibration`, monotone by construction), so no question is scored by a fit that saw it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.retrieval import DEFAULT_DATA, load_chats, rendered_tokens
from bench.retrieval_report import BUDGETS, mean, recall
from mnemo.services.context_assembler.assemble.budget import SHARPNESS

#: The calibration's bins (quantiles of each section's scores) and the tokens of a typical rendered turn (the
#: median REALTALK turn renders to ~27-36 tokens) that puts a summary's evidence per token on the turns' scale.
TURN_BINS, SUMMARY_BINS, TURN_TOKENS = 20, 5, 36


def replay(
    row: dict[str, Any],
    cost: dict[str, int],
    budget: int,
    *,
    dedup: bool = False,
    memory_weight: float = 1.0,
    history: int | None = None,
    sharpness: float = SHARPNESS,
    summary_score: Callable[[float], float] | None = None,
) -> set[str]:
    """The turns a reply of ``budget`` tokens would show, packed again from ``row`` (one ``--dump`` line);
    ``summary_score`` maps a summary's score before packing (:func:`summary_calibration`)."""
    sections = row["sections"][str(budget)]
    shown = list(row["history"]) if history is None else row["history"][len(row["history"]) - history :]
    reserved = sections.get("history", 0) if history is None else sum(cost[i] for i in shown)
    used = reserved + sections.get("system", 0)
    offers = [(float(s), cost[i], {i}) for i, s in row["scored"]]
    offers += [
        (_memory_score(m, summary_score) * memory_weight, int(m["tokens"]), set(m["message_ids"] or ()))
        for m in row["memories"]
        if m["score"] is not None and m["tokens"] is not None
    ]
    offers.sort(key=lambda o: -(max(0.0, min(1.0, o[0])) ** sharpness) / max(1, o[1]))
    seen = set(shown)
    for _, tokens, turns in offers:
        if used + tokens > budget or (dedup and turns <= seen):
            continue
        used += tokens
        seen |= turns
    return seen


def _memory_score(memory: dict[str, Any], summary_score: Callable[[float], float] | None) -> float:
    score = float(memory["score"])
    return summary_score(score) if summary_score is not None and memory["kind"] == "summary" else score


def _curve(pairs: list[tuple[float, float]], bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean score and mean evidence of ``bins`` quantile bins by score, the evidence made non-decreasing."""
    ordered = sorted(pairs)
    chunks = [c for c in np.array_split(np.array(ordered), min(bins, len(ordered))) if len(c)]
    xs = np.array([c[:, 0].mean() for c in chunks])
    return xs, np.maximum.accumulate(np.array([c[:, 1].mean() for c in chunks]))


def summary_calibration(train: Sequence[dict[str, Any]]) -> Callable[[float], float]:
    """A summary's score -> the turn score whose turns hold as much of a question's evidence per token, both
    curves fitted on ``train`` (dump lines): the share of the evidence a turn / a summary holds (by the turns
    it cites), by score; a summary's share per token times :data:`TURN_TOKENS` read back on the turns' curve."""
    turns: list[tuple[float, float]] = []
    summaries: list[tuple[float, float]] = []
    for r in train:
        evidence = set(r["evidence"])
        if not evidence:
            continue
        turns += [(float(s), float(i in evidence) / len(evidence)) for i, s in r["scored"]]
        summaries += [
            (float(m["score"]), len(evidence & set(m["message_ids"] or ())) / len(evidence) / max(1, m["tokens"]))
            for m in r["memories"]
            if m["kind"] == "summary" and m["score"] is not None and m["tokens"]
        ]
    if not turns or not summaries:
        return lambda score: score
    tx, ty = _curve(turns, TURN_BINS)
    sx, sy = _curve(summaries, SUMMARY_BINS)
    ty, first = np.unique(ty, return_index=True)  # equal evidence at several turn scores: the lowest of them
    tx = tx[first]
    return lambda score: float(np.interp(np.interp(score, sx, sy) * TURN_TOKENS, ty, tx))


def table(rows: Sequence[dict[str, Any]], costs: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    levers: dict[str, dict[str, Any]] = {
        "replayed": {},
        "memory dedup": {"dedup": True},
        "memories x2": {"memory_weight": 2.0},
        "history 2": {"history": 2},
        "history 0": {"history": 0},
        "sharpness 8": {"sharpness": 8.0},
    }
    out = {"as run": {str(b): mean([recall(r["evidence"], r["budget"][str(b)]) for r in rows]) for b in BUDGETS}}
    for name, kw in levers.items():
        out[name] = {
            str(b): mean([recall(r["evidence"], replay(r, costs[r["chat"]], b, **kw)) for r in rows]) for b in BUDGETS
        }
    fits = {chat: summary_calibration([r for r in rows if r["chat"] != chat]) for chat in {r["chat"] for r in rows}}
    out["summaries calibrated"] = {
        str(b): mean(
            [recall(r["evidence"], replay(r, costs[r["chat"]], b, summary_score=fits[r["chat"]])) for r in rows]
        )
        for b in BUDGETS
    }
    return out


def main(dump: Path, data: Path) -> None:
    rows = [json.loads(line) for line in dump.read_text().splitlines() if line.strip()]
    wanted = {r["chat"] for r in rows}
    chats = [c for c in load_chats(data, None) if c.key in wanted]
    costs = {c.key: {t.dia_id: rendered_tokens(t) for t in c.turns} for c in chats}
    result = table(rows, costs)
    print(f"{len(rows)} questions; recall within " + " / ".join(f"{b:,}" for b in BUDGETS) + " tokens")
    for name, figures in result.items():
        print(f"{name:<22}" + "".join(f"{v:>9.3f}" for v in figures.values()))
    print(json.dumps({"questions": len(rows), **result}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dump", type=Path, help="what make bench-retrieval ARGS='--dump FILE' wrote")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the dataset the run replayed")
    args = parser.parse_args()
    main(args.dump, args.data)
