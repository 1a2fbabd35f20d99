"""The knowledge stream's fold table, ``fact_folds``: each fact event to its step of a fold. The knowledge read
model, its in-memory fake and the fact vectors all fold by it, so a new fact event is given a step in each of
them or fails to build, never missed by one."""

from __future__ import annotations

from typing import TypeVar

from mnemo.shared.events.recorded import FACT_LEARNED, FACT_PROMOTED, FACT_RETIRED, FACT_UNPROMOTED, FACTS_CONSOLIDATED

#: The status of a current fact (the read model's others: superseded, consolidated, retired).
ACTIVE = "active"

Step = TypeVar("Step")


def fact_folds(*, learned: Step, consolidated: Step, retired: Step, scope_changed: Step) -> dict[str, Step]:
    """The fact events of a knowledge stream, each to its step of a fold (a promotion and its undoing are one
    step: a scope change)."""
    return {
        FACT_LEARNED.name: learned,
        FACTS_CONSOLIDATED.name: consolidated,
        FACT_RETIRED.name: retired,
        FACT_PROMOTED.name: scope_changed,
        FACT_UNPROMOTED.name: scope_changed,
    }


#: The types of every fact event (``fact_folds``'s keys): what the knowledge read model projects.
FACT_EVENTS = frozenset(fact_folds(learned=0, consolidated=0, retired=0, scope_changed=0))
