"""What an edit or a delete of a message makes of the facts learned from it (the knowledge aggregate's deciders):

- the facts learned from the message (directly, or folded into a consolidation) get ``knowledge.fact_retired``
  (``stale`` after an edit, ``deleted``); event ids are deterministic over (fact, edit/delete event), so a
  redelivery appends nothing, and facts the same change taught are never retired by it (``stale_facts``);
- a retired consolidated fact is consolidated again from the facts it folded that did not come from that
  message (``reconsolidation``), so what the character learned elsewhere stays known.

Re-extracting an edited message's new text is learning, as for a new message (the memory-extractor's).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, TypeVar

from mnemo.shared.aggregates.knowledge.curation import Fact, consolidation, merge_extractive
from mnemo.shared.aggregates.knowledge.witnesses import Witnessing
from mnemo.shared.events.envelope import deterministic_id
from mnemo.shared.events.recorded import FACT_RETIRED, FactRetired, knowledge_stream, new_event


class Derived(Fact, Protocol):
    @property
    def causation_id(self) -> str | None: ...


D = TypeVar("D", bound=Derived)


def stale_facts(derived: Sequence[D], change_event_id: str) -> list[D]:
    """The facts derived from the changed message but those this very change taught (a redelivered edit)."""
    return [f for f in derived if f.causation_id != change_event_id]


def retirements(
    tenant_id: str,
    stale: Sequence[Fact],
    *,
    message_id: str,
    deleted: bool,
    change_event_id: str,
    at: datetime,
    traceparent: str | None = None,
) -> list[Witnessing]:
    """One ``knowledge.fact_retired`` per stale fact, in its character's stream, caused by the change."""
    out: list[Witnessing] = []
    for f in stale:
        retired = FactRetired(
            fact_id=f.fact_id,
            character_id=f.character_id,
            user_id=f.user_id,
            reason="deleted" if deleted else "stale",
            message_id=message_id,
            retired_at=at,
        )
        event = new_event(
            retired,
            event_id=deterministic_id(FACT_RETIRED.name, tenant_id, f.fact_id, change_event_id),
            tenant_id=tenant_id,
            occurred_at=at,
            causation_id=change_event_id,
            traceparent=traceparent,
        )
        out.append(Witnessing(knowledge_stream(tenant_id, f.character_id), event))
    return out


def reconsolidation(
    tenant_id: str, retired: Fact, survivors: Sequence[Fact], *, change_event_id: str
) -> Witnessing | None:
    """The consolidation of ``survivors`` (what a retired consolidated fact folded from other messages), oldest
    first and merged extractively; None when nothing survives."""
    if not survivors:
        return None
    ordered = sorted(survivors, key=lambda f: (f.learned_at, f.fact_id))
    event = consolidation(
        tenant_id, ordered, like=retired, text=merge_extractive(ordered), causation_id=change_event_id
    )
    return Witnessing(knowledge_stream(tenant_id, retired.character_id), event)
