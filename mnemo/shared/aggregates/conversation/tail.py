"""A conversation's log tail folded once into everything ingest decides on: the state, the statuses of the
messages it records or deletes, and (for swipes and forks) the timeline.

Why one pass: a stream that lost an optimistic-concurrency race is caught up by reading the events it lacks;
folding them three times (state, statuses, timeline, each sorting the tail again) did the same walk thrice.
Each part keeps its own rule: the state takes only the very next version, the statuses are what this tail
alone tells (a deletion of a message recorded before it has index -1, as :func:`known_from_events` says),
the timeline skips what it already folded.
"""

from __future__ import annotations

from collections.abc import Iterable

from mnemo.shared.aggregates.conversation.known import KnownMessage, learn
from mnemo.shared.aggregates.conversation.state import ConversationState, evolve
from mnemo.shared.aggregates.conversation.timeline import Timeline
from mnemo.shared.events.envelope import EventEnvelope


def fold_tail(
    state: ConversationState, tail: Iterable[EventEnvelope], timeline: Timeline | None = None
) -> tuple[ConversationState, dict[str, KnownMessage]]:
    """``state`` after ``tail`` and the message statuses ``tail`` sets; ``timeline`` (if any) is folded on in
    place."""
    known: dict[str, KnownMessage] = {}
    for env in sorted(tail, key=lambda e: e.version):
        state = evolve(state, env)
        learn(known, env)
        if timeline is not None:
            timeline.step(env)
    return state, known
