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
- ``history N``: only the newest N history messages reserved (costed as a retrieved turn).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.retrieval import DEFAULT_DATA, load_chats, rendered_tokens
from bench.retrieval_report import BUDGETS, mean, recall
from mnemo.services.context_assembler.assemble.budget import SHARPNESS


def replay(
    row: dict[str, Any],
    cost: dict[str, int],
    budget: int,
    *,
    dedup: bool = False,
    memory_weight: float = 1.0,
    history: int | None = None,
) -> set[str]:
    """The turns a reply of ``budget`` tokens would show, packed again from ``row`` (one ``--dump`` line)."""
    sections = row["sections"][str(budget)]
    shown = list(row["history"]) if history is None else row["history"][len(row["history"]) - history :]
    reserved = sections.get("history", 0) if history is None else sum(cost[i] for i in shown)
    used = reserved + sections.get("system", 0)
    offers = [(float(s), cost[i], {i}) for i, s in row["scored"]]
    offers += [
        (float(m["score"]) * memory_weight, int(m["tokens"]), set(m["message_ids"] or ()))
        for m in row["memories"]
        if m["score"] is not None and m["tokens"] is not None
    ]
    offers.sort(key=lambda o: -(max(0.0, min(1.0, o[0])) ** SHARPNESS) / max(1, o[1]))
    seen = set(shown)
    for _, tokens, turns in offers:
        if used + tokens > budget or (dedup and turns <= seen):
            continue
        used += tokens
        seen |= turns
    return seen


def table(rows: Sequence[dict[str, Any]], costs: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    levers: dict[str, dict[str, Any]] = {
        "replayed": {},
        "memory dedup": {"dedup": True},
        "memories x2": {"memory_weight": 2.0},
        "history 2": {"history": 2},
        "history 0": {"history": 0},
    }
    out = {"as run": {str(b): mean([recall(r["evidence"], r["budget"][str(b)]) for r in rows]) for b in BUDGETS}}
    for name, kw in levers.items():
        out[name] = {
            str(b): mean([recall(r["evidence"], replay(r, costs[r["chat"]], b, **kw)) for r in rows]) for b in BUDGETS
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
        print(f"{name:<14}" + "".join(f"{v:>9.3f}" for v in figures.values()))
    print(json.dumps({"questions": len(rows), **result}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dump", type=Path, help="what make bench-retrieval ARGS='--dump FILE' wrote")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the dataset the run replayed")
    args = parser.parse_args()
    main(args.dump, args.data)
