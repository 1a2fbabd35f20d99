"""Scoring and report of `make bench-retrieval` (``bench/retrieval.py``): recall at k and within token budgets,
by question kind, beside the same-run baselines.

Within a budget, what the model would see counts: every ``message`` source of the budgeted reply (retrieved
and history), and every turn a memory of the reply cites (a summary's or legacy memory's ``message_ids``: the
turns its text quotes; a fact's: the turns it was learned from), as the LoCoMo harness
(snap-research/locomo, ``task_eval/``) credits a retrieved observation with the dialogue turns it cites and
a session summary with its session's evidence. The turns-only figure (memories not counted) is reported
beside it, so the history of the benchmark stays comparable.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

KS = (5, 10, 20)
BUDGETS = (500, 1000, 2000, 4000)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
#: Source kinds that stand for turns they cite, not for a turn of their own.
CITING_KINDS = ("summary", "legacy_memory", "knowledge")


@dataclass
class Result:
    """One question's rankings by every method, plus what the budgeted replies showed."""

    chat: str
    category: int
    evidence: tuple[str, ...]
    system: list[str] = field(default_factory=list)  # scored message sources, best first
    # max_tokens -> every message source and every turn a memory of the reply cites
    budget: dict[int, set[str]] = field(default_factory=dict)
    budget_turns: dict[int, set[str]] = field(default_factory=dict)  # max_tokens -> message sources only
    bm25: list[str] = field(default_factory=list)
    dense: list[str] = field(default_factory=list)
    bm25_budget: dict[int, set[str]] = field(default_factory=dict)
    dense_budget: dict[int, set[str]] = field(default_factory=dict)
    degraded: list[str] = field(default_factory=list)
    sections: dict[int, dict[str, int]] = field(default_factory=dict)  # max_tokens -> tokens per section
    scored: list[tuple[str, float]] = field(default_factory=list)  # the unbounded reply's (id, score), best first
    history: list[str] = field(default_factory=list)  # the unbounded reply's history message ids
    # The unbounded reply's memories and facts: {"kind", "id", "score", "message_ids", "tokens"} (``--dump``).
    memories: list[dict[str, Any]] = field(default_factory=list)


def message_sources(reply: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in reply.get("sources", []) if s.get("kind") == "message"]


def seen_turns(reply: dict[str, Any]) -> set[str]:
    """The turns a reply shows: its messages, and the turns its memories and facts cite."""
    out = {str(s["id"]) for s in message_sources(reply)}
    for s in reply.get("sources", []):
        if s.get("kind") in CITING_KINDS:
            out.update(str(m) for m in s.get("message_ids") or ())
    return out


def recall(evidence: Sequence[str], found: Iterable[str]) -> float:
    wanted = set(evidence)
    return len(wanted & set(found)) / len(wanted)


def mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def at_k(results: Sequence[Result], method: str) -> dict[str, float]:
    return {f"recall@{k}": mean([recall(r.evidence, getattr(r, method)[:k]) for r in results]) for k in KS}


def at_budget(results: Sequence[Result], attr: str) -> dict[str, float]:
    return {str(m): mean([recall(r.evidence, getattr(r, attr)[m]) for r in results]) for m in BUDGETS}


def summarize(results: Sequence[Result]) -> dict[str, Any]:
    return {
        "questions": len(results),
        "system": at_k(results, "system"),
        "bm25": at_k(results, "bm25"),
        "dense": at_k(results, "dense"),
        "token_budget": at_budget(results, "budget"),
        "token_budget_turns_only": at_budget(results, "budget_turns"),
        "token_budget_baselines": {
            "bm25": at_budget(results, "bm25_budget"),
            "dense": at_budget(results, "dense_budget"),
        },
    }


def budget_sections(results: Sequence[Result]) -> dict[str, dict[str, float]]:
    """Mean tokens per section of the budgeted replies: where the budget went, beside its recall."""
    out: dict[str, dict[str, float]] = {}
    for m in BUDGETS:
        names = sorted({name for r in results for name in r.sections.get(m, {})})
        out[str(m)] = {n: round(sum(r.sections.get(m, {}).get(n, 0) for r in results) / len(results), 1) for n in names}
    return out


def budget_shares(section_use: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The share of ``max_tokens`` each section used, on average (what is left over is unused)."""
    return {m: {n: round(tokens / int(m), 3) for n, tokens in use.items()} for m, use in section_use.items()}


def is_budget_note(entry: str) -> bool:
    """``lore:<uid>`` / ``knowledge:<id>``: what the budget could not fit, named by design; not a failure."""
    return entry.startswith(("lore:", "knowledge:"))


def budget_recall(summary: dict[str, Any], method: str, max_tokens: int) -> float:
    if method == "system":
        return float(summary["token_budget"][str(max_tokens)])
    if method == "turns":
        return float(summary["token_budget_turns_only"][str(max_tokens)])
    return float(summary["token_budget_baselines"][method][str(max_tokens)])


def print_table(overall: dict[str, Any], by_category: dict[str, dict[str, Any]]) -> None:
    """Recall at k, then within each budget (``system`` credits memories with the turns they cite, ``turns``
    counts the reply's messages only), per question kind."""
    groups = [("all", overall), *((f"{c} {CATEGORY_NAMES.get(int(c), '?')}", s) for c, s in by_category.items())]
    header = f"{'':<18}" + "".join(f"{name} (n={s['questions']})".rjust(24) for name, s in groups)
    print("\n" + header)
    for method in ("system", "bm25", "dense"):
        for k in KS:
            row = f"{method + ' R@' + str(k):<18}" + "".join(f"{s[method][f'recall@{k}']:>24.3f}" for _, s in groups)
            print(row)
    for m in BUDGETS:
        for method in ("system", "turns", "bm25", "dense"):
            row = f"{method + ' @' + str(m) + ' tok':<18}"
            print(row + "".join(f"{budget_recall(s, method, m):>24.3f}" for _, s in groups))
    print(flush=True)
