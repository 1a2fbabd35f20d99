"""The knowledge read model brought up to the log before a decision is made on it.

Learning and folding decide on the read model (which facts a character knows) and append at a stream version,
so that a writer who appended meanwhile makes the append conflict. That guard holds only if the read model
already holds every event up to that version. The version read from the store alone does not promise it: a
writer projects its events only after its append, so in between the log is ahead of the read model, and a
replica that read the version then decided on facts that missed the other's (two replicas learned "Ana lives in
Paris." twice; CI, 2026-11-28). So the version a decision appends at is the one the read model has been
brought to here: the stream's events after the recorded position, applied (idempotently: the other writer's
own projection may come after), and the new position recorded for the next decision.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.shared.eventlog.port import EventStore
from mnemo.shared.readmodels.ports import KnowledgePort


async def read_model_at_log(
    store: EventStore, knowledge: KnowledgePort, tenant_id: str, streams: Sequence[str]
) -> dict[str, int]:
    """Apply each stream's events past its recorded position; per stream, the version the read model now holds
    every event through (the version to append a decision made on it at)."""
    through = await knowledge.caught_up(tenant_id, streams)
    moved: dict[str, int] = {}
    for stream in streams:
        if tail := await store.read_stream(stream, through[stream]):
            await knowledge.apply(tail)
            through[stream] = moved[stream] = tail[-1].version
    if moved:
        await knowledge.mark_caught_up(tenant_id, moved)
    return through
