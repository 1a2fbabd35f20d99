"""Remembered memories' points (kind ``memory``), planned from the memories read model (pure).

The memory service projects a memory's stream into the read model before it publishes the events, so when a
``memory.*`` event arrives here the read model already holds the memory's current version (or nothing, once
it was forgotten or its owner erased). Each memory an event names is therefore planned from that state, not
from the event: its points are deleted and, when it is still live, written again from its current title and
text. A late redelivery of an old version cannot bring old text back, and a batch holding several versions
writes the memory once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from mnemo.services.embedding.plan import Chunker, PendingPoint, Plan, epoch
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import MEMORY_EVENTS
from mnemo.shared.readmodels.memories import MemoryView
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import PayloadValue


def memories_touched(envelopes: Iterable[EventEnvelope]) -> set[tuple[str, str]]:
    """(tenant, memory id) of every memory the batch's ``memory.*`` events name."""
    return {(env.tenant_id, str(env.payload["memory_id"])) for env in envelopes if env.type in MEMORY_EVENTS}


def memory_points(view: MemoryView, model: str, chunker: Chunker) -> list[PendingPoint]:
    """The points of one memory: its title and text, chunked, each findable by namespace, audience, type,
    tags and time."""
    payload: dict[str, PayloadValue] = {
        vp.TENANT_ID: view.tenant_id,
        vp.USER_ID: view.user_id,
        vp.KIND: vp.MEMORY,
        vp.SOURCE_ID: view.memory_id,
        vp.MEMORY_ID: view.memory_id,
        vp.NAMESPACE: view.owner_namespace,
        vp.AUDIENCE: list(view.audience),
        vp.MEMORY_TYPE: view.memory_type,
        vp.TAGS: list(view.tags),
        vp.CREATED_AT: epoch(view.occurred_at),
        vp.MODEL: model,
    }
    return [
        PendingPoint(
            vp.point_id(vp.MEMORY, view.tenant_id, view.user_id, "", view.memory_id, i),
            f"{view.title}\n{chunk}",
            payload | {vp.CHUNK: i},
        )
        for i, chunk in enumerate(chunker(view.content) or [view.content])
    ]


def plan_memories(
    envelopes: Sequence[EventEnvelope],
    plan: Plan,
    *,
    model: str,
    chunker: Chunker,
    states: Mapping[tuple[str, str], MemoryView],
) -> None:
    """Each memory the batch names: its points deleted, then written again from ``states`` (the read model's
    current version) if it is still there."""
    touched = sorted(memories_touched(envelopes))
    by_tenant: dict[str, list[str]] = {}
    for tenant_id, memory_id in touched:
        by_tenant.setdefault(tenant_id, []).append(memory_id)
    plan.deletions.extend(vp.memories_by_id(t, ids) for t, ids in sorted(by_tenant.items()))
    for key in touched:
        if (view := states.get(key)) is not None:
            plan.points.extend(memory_points(view, model, chunker))
