"""Characters' facts' points (kind ``fact``), planned from the log and the knowledge read model (pure).

A character's current fact is one point (a sentence: one chunk) with ``audience`` = that character and its
``scope``; retired or folded facts lose their points, a scope change rewrites them (see :func:`plan_facts`).
Superseded facts keep their points: the read side takes only the current facts of the read model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mnemo.services.embedding.plan import Chunker, PendingPoint, Plan
from mnemo.shared.aggregates.knowledge import FACT_EVENTS, fact_folds
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    FACTS_CONSOLIDATED,
    FactLearned,
    FactRetired,
    FactsConsolidated,
    FactScopeChanged,
)
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import PayloadValue


@dataclass(frozen=True)
class FactState:
    """What the knowledge read model shows of a fact (the extractor writes it right after appending)."""

    fact_id: str
    user_id: str
    character_id: str
    text: str
    scope: str
    scope_version: int  # log version of the event that set ``scope``
    current: bool  # not retired and not consolidated away (superseded facts stay current here)


def fact_points(
    tenant_id: str, fact_id: str, user_id: str, character_id: str, text: str, scope: str, model: str, chunker: Chunker
) -> list[PendingPoint]:
    """The points of one fact: its text (a sentence: one chunk), visible to its character only."""
    payload: dict[str, PayloadValue] = {
        vp.TENANT_ID: tenant_id,
        vp.USER_ID: user_id,
        vp.KIND: vp.FACT,
        vp.FACT_ID: fact_id,
        vp.SOURCE_ID: fact_id,
        vp.CHARACTER_ID: character_id,
        vp.AUDIENCE: [character_id],
        vp.SCOPE: scope,
        vp.MODEL: model,
    }
    return [
        PendingPoint(vp.point_id(vp.FACT, tenant_id, user_id, "", fact_id, i), chunk, payload | {vp.CHUNK: i})
        for i, chunk in enumerate(chunker(text) or [text])
    ]


@dataclass
class _Facts:
    """What a batch's knowledge events say, folded in log order."""

    gone: dict[str, set[str]] = field(default_factory=dict)  # per tenant: retired or folded away
    created: dict[tuple[str, str], FactLearned] = field(default_factory=dict)
    scope: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)  # newest (version, scope)

    def newer(self, key: tuple[str, str], version: int, value: str) -> None:
        if key not in self.scope or version > self.scope[key][0]:
            self.scope[key] = (version, value)


def _learned(facts: _Facts, env: EventEnvelope) -> None:
    fact = FactLearned.model_validate(env.payload)
    facts.created[(env.tenant_id, fact.fact_id)] = fact
    facts.newer((env.tenant_id, fact.fact_id), env.version, fact.scope)


def _consolidated(facts: _Facts, env: EventEnvelope) -> None:
    fact = FactsConsolidated.model_validate(env.payload)
    facts.created[(env.tenant_id, fact.fact_id)] = fact
    facts.newer((env.tenant_id, fact.fact_id), env.version, fact.scope)
    facts.gone.setdefault(env.tenant_id, set()).update(fact.consolidates)


def _retired(facts: _Facts, env: EventEnvelope) -> None:
    facts.gone.setdefault(env.tenant_id, set()).add(FactRetired.model_validate(env.payload).fact_id)


def _scope_changed(facts: _Facts, env: EventEnvelope) -> None:
    change = FactScopeChanged.model_validate(env.payload)
    facts.newer((env.tenant_id, change.fact_id), env.version, change.to_scope)


_FOLDS: dict[str, Callable[[_Facts, EventEnvelope], None]] = fact_folds(
    learned=_learned, consolidated=_consolidated, retired=_retired, scope_changed=_scope_changed
)


def fact_ids_touched(envelopes: Iterable[EventEnvelope]) -> dict[str, set[str]]:
    """Per tenant: the fact ids a batch's knowledge events name (created, folded, retired or re-scoped), whose
    read model state :func:`plan_facts` needs."""
    out: dict[str, set[str]] = {}
    for env in envelopes:
        if env.type in FACT_EVENTS:
            ids = out.setdefault(env.tenant_id, set())
            ids.add(str(env.payload["fact_id"]))
            if env.type == FACTS_CONSOLIDATED.name:
                ids.update(str(i) for i in env.payload.get("consolidates", ()))
    return out


def plan_facts(
    envelopes: Sequence[EventEnvelope],
    plan: Plan,
    *,
    model: str,
    chunker: Chunker,
    states: Mapping[tuple[str, str], FactState],
) -> None:
    """Add the facts' deletions and points to ``plan``. ``states``: (tenant, fact id) -> the knowledge read
    model's view of the fact, for the facts of :func:`fact_ids_touched` it holds.

    - ``knowledge.fact_learned`` / ``.facts_consolidated``: the fact's points, with its scope; a consolidation
      also deletes the points of the facts it folds.
    - ``knowledge.fact_retired``: the fact's points are deleted.
    - ``knowledge.fact_promoted`` / ``_unpromoted``: the fact's points are written again with the new scope
      (same ids: an overwrite), the text taken from the read model (the event carries none).

    Late redeliveries cannot undo later changes: a fact retired or folded in this batch, or no longer current
    in the read model, is not indexed (deletions run before upserts); the scope is the newest among the
    batch's events and the read model's (``scope_version``), so an old promotion redelivered after its undo,
    or an old creation after a promotion, keeps the current scope.
    """
    facts = _Facts()
    for env in envelopes:
        if (fold := _FOLDS.get(env.type)) is not None:
            fold(facts, env)
    for (t, fid), known in states.items():
        if (t, fid) in facts.scope:
            facts.newer((t, fid), known.scope_version, known.scope)
    plan.deletions.extend(vp.facts_by_id(t, ids) for t, ids in sorted(facts.gone.items()) if ids)
    for (t, fid), (_, current_scope) in facts.scope.items():
        state = states.get((t, fid))
        if fid in facts.gone.get(t, set()) or (state is not None and not state.current):
            continue
        if (t, fid) in facts.created:
            f = facts.created[(t, fid)]
            plan.points.extend(fact_points(t, fid, f.user_id, f.character_id, f.text, current_scope, model, chunker))
        elif state is not None:  # a scope change of a fact learned in an earlier batch
            plan.points.extend(
                fact_points(t, fid, state.user_id, state.character_id, state.text, current_scope, model, chunker)
            )
