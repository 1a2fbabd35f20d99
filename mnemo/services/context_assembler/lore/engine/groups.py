"""Inclusion groups (spec §3.8): at most one winner per group, chosen before the probability roll.

Two SillyTavern bugs are not copied (the spec names them): removing an entry that another group already removed
takes out the last candidate instead (`splice(-1)`), and the "group already activated" test compares the whole
comma-separated `group` string with one name. Here removal is by identity and earlier activations are matched
per group name.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

from mnemo.services.context_assembler.lore.engine.compiled import CompiledEntry


def filter_groups(
    candidates: list[CompiledEntry],
    sticky: set[str],
    activated: Iterable[CompiledEntry],
    use_scoring: bool,
    score: Callable[[CompiledEntry], int],
    rng: random.Random,
) -> list[CompiledEntry]:
    grouped: dict[str, list[CompiledEntry]] = {}
    for ce in candidates:
        for name in ce.groups:
            grouped.setdefault(name, []).append(ce)
    if not grouped:
        return candidates
    removed: set[str] = set()
    done_groups = {name for ce in activated for name in ce.groups}
    for name, members in grouped.items():
        live = [ce for ce in members if ce.ident not in removed]
        if any(ce.ident in sticky for ce in live):
            removed.update(ce.ident for ce in live if ce.ident not in sticky)
            continue
        scoring_on = use_scoring or any(ce.entry.use_group_scoring is True for ce in live)
        if scoring_on and len(live) > 1:
            scores = {ce.ident: score(ce) for ce in live}
            best = max(scores.values())
            for ce in live:
                own = ce.entry.use_group_scoring if ce.entry.use_group_scoring is not None else use_scoring
                if own and scores[ce.ident] < best:
                    removed.add(ce.ident)
            live = [ce for ce in live if ce.ident not in removed]
        if name in done_groups:
            removed.update(ce.ident for ce in live)
            continue
        if len(live) <= 1:
            continue
        overriding = [ce for ce in live if ce.entry.group_override]
        if overriding:
            winner = max(live, key=lambda ce: ce.entry.order)  # max() keeps the first on ties
        else:
            weights = [ce.entry.group_weight for ce in live]
            roll = rng.random() * sum(weights)
            running = 0.0
            winner = live[-1]
            for ce, weight in zip(live, weights, strict=True):
                running += weight
                if running >= roll:
                    winner = ce
                    break
        removed.update(ce.ident for ce in live if ce is not winner)
    return [ce for ce in candidates if ce.ident not in removed]
