"""Legacy memories' points (kind ``legacy_memory``): a user's summaries turned into lore (pure).

``legacy_lore.created`` indexes the entry, each chunk embedded WITH a header of its metadata (participants,
date range, mood, see :func:`legacy_header`) and filterable by ``applies_to`` (the bots and personas it
applies to); ``legacy_lore.deleted`` deletes them. The last event of an entry in a batch wins, as for
messages, and an entry the legacy lore read model already shows deleted is not indexed again.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.services.embedding.plan import Chunker, PendingPoint, Plan, epoch
from mnemo.shared.aggregates.conversation import as_utc
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import LEGACY_LORE_CREATED, LEGACY_LORE_DELETED, LegacyLoreCreated
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import PayloadValue

LEGACY_EVENTS = frozenset({LEGACY_LORE_CREATED.name, LEGACY_LORE_DELETED.name})


def legacy_header(entry: LegacyLoreCreated) -> str:
    """The metadata line embedded with each chunk, so a search for who, when or the mood finds the entry:
    ``Memory of <participants>, <date range>, mood: <tags>`` (preceded by the title when there is one)."""
    start, end = as_utc(entry.start_at).date(), as_utc(entry.end_at).date()
    dates = start.isoformat() if start == end else f"{start.isoformat()} to {end.isoformat()}"
    who = ", ".join(entry.participants) or "unknown participants"
    line = f"Memory of {who}, {dates}"
    if entry.emotional_tags:
        line += f", mood: {', '.join(entry.emotional_tags)}"
    return f"{entry.title}. {line}" if entry.title else line


def legacy_points(env: EventEnvelope, model: str, chunker: Chunker) -> list[PendingPoint]:
    e = LegacyLoreCreated.model_validate(env.payload)
    payload: dict[str, PayloadValue] = {
        vp.TENANT_ID: env.tenant_id,
        vp.USER_ID: e.user_id,
        vp.CONVERSATION_ID: e.conversation_id,
        vp.KIND: vp.LEGACY_MEMORY,
        vp.SOURCE_ID: e.legacy_id,
        vp.LEGACY_ID: e.legacy_id,
        vp.MEMORY_ID: e.memory_id,
        vp.APPLIES_TO: sorted({*e.applies_to_bots, *e.applies_to_personas}),
        vp.PARTICIPANTS: list(e.participants),
        vp.IMPORTANCE: e.importance,
        vp.START_AT: epoch(e.start_at),
        vp.END_AT: epoch(e.end_at),
        vp.CREATED_AT: epoch(e.end_at),
        vp.MODEL: model,
    }
    header = legacy_header(e)
    return [
        PendingPoint(
            vp.point_id(vp.LEGACY_MEMORY, env.tenant_id, e.user_id, "", e.legacy_id, i),
            f"{header}\n{text}",
            payload | {vp.CHUNK: i},
        )
        for i, text in enumerate(chunker(e.text) or [""])
    ]


def plan_legacy(
    envelopes: Sequence[EventEnvelope], plan: Plan, *, model: str, chunker: Chunker, deleted: set[str]
) -> None:
    """Add the legacy entries' deletions and points to ``plan``; the last event of each entry counts, and a
    creation of an entry in ``deleted`` (the legacy lore read model shows it deleted: a late redelivery) is
    skipped, so it cannot come back into search."""
    latest: dict[tuple[str, str, str], EventEnvelope] = {}
    for env in envelopes:
        if env.type in LEGACY_EVENTS:
            key = (env.tenant_id, str(env.payload["user_id"]), str(env.payload["legacy_id"]))
            if key not in latest or env.version > latest[key].version:
                latest[key] = env
    for (tenant_id, user_id, legacy_id), env in latest.items():
        if env.type == LEGACY_LORE_DELETED.name:
            plan.deletions.append(vp.legacy_by_id(tenant_id, user_id, legacy_id))
        elif legacy_id not in deleted:
            plan.points.extend(legacy_points(env, model, chunker))
