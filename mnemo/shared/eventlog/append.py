"""Appending to one stream under optimistic concurrency: decide, append at the version decided on, retry.

Every writer of mnemo does the same thing: load what the stream (or its read model) says, decide the new
events with a pure function, append them at the version that decision was based on; when another writer
got there first (:class:`ConcurrencyError`) load again and decide again, at most
:data:`MAX_CONFLICT_RETRIES` times, then give up with :class:`ConflictRetriesExhausted`. Only committed
events are projected and published, and only after their append succeeded: a failed attempt publishes
nothing. Batched appends over many streams (ingest, the extractor's witnessings) keep their own loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from mnemo.shared.eventlog.codec import StoredDoc
from mnemo.shared.eventlog.port import AppendResult, ConcurrencyError, EventStore
from mnemo.shared.events.envelope import EventEnvelope, NewEvent

MAX_CONFLICT_RETRIES = 5
"""Attempts per append before giving up: a conflict means another writer just changed the stream, so a few
re-reads settle it; more would only hide a hot loop."""

R = TypeVar("R")


class ConflictRetriesExhausted(ConcurrencyError):
    """Every attempt lost its race. A :class:`ConcurrencyError`, so callers that handled the old error still do."""

    def __init__(self, stream_id: str, attempts: int) -> None:
        super().__init__(stream_id, -1)
        self.attempts = attempts
        self.args = (f"stream {stream_id!r}: still conflicting with other writers after {attempts} attempt(s)",)

    def __str__(self) -> str:
        return str(self.args[0])


class Publisher(Protocol):
    """What the helper needs of ``mnemo.shared.deps.CommittedPublisher`` (the relay's fast path)."""

    async def publish_committed(self, events: Sequence[EventEnvelope | StoredDoc]) -> None: ...


@dataclass(frozen=True)
class AppendDecision(Generic[R]):
    """One attempt's decision: ``events`` to append at ``expected_version`` (none: nothing to do) and the
    ``value`` the caller gets back if this attempt is the one that holds."""

    expected_version: int
    events: Sequence[NewEvent]
    value: R


@dataclass(frozen=True)
class Appended(Generic[R]):
    """The decision that held and what its append did; ``result`` is None when it had nothing to append."""

    value: R
    result: AppendResult | None


Project = Callable[[AppendResult], Awaitable[None]]


async def try_append(
    store: EventStore,
    stream_id: str,
    expected_version: int,
    events: Sequence[NewEvent],
    *,
    publisher: Publisher | None = None,
    project: Project | None = None,
) -> AppendResult | None:
    """One attempt: append, then ``project`` the result and publish what it committed (if anything).
    None when another writer got there first (nothing projected or published)."""
    try:
        result = await store.append(stream_id, expected_version, events)
    except ConcurrencyError:
        return None
    if project is not None:
        try:
            await project(result)
        except BaseException:  # no fast path will come for what was committed: the relay's loop takes it now
            await store.publish_failed([e.event_id for e in result.committed])
            raise
    if publisher is not None and result.committed:
        await publisher.publish_committed(result.committed)
    return result


async def append_with_retry(
    store: EventStore,
    stream_id: str,
    decide: Callable[[], Awaitable[AppendDecision[R]]],
    *,
    publisher: Publisher | None = None,
    project: Project | None = None,
    on_conflict: Callable[[], Awaitable[None]] | None = None,
    max_retries: int = MAX_CONFLICT_RETRIES,
) -> Appended[R]:
    """Decide (``decide`` loads what it needs each time) and append until an attempt holds.

    A decision with no events ends the loop without an append. ``on_conflict`` runs after a lost race,
    before deciding again (e.g. to bring a read model up to the log). Raises what ``decide`` raises, and
    :class:`ConflictRetriesExhausted` after ``max_retries`` lost races."""
    for _ in range(max_retries):
        decision = await decide()
        if not decision.events:
            return Appended(decision.value, None)
        result = await try_append(
            store, stream_id, decision.expected_version, decision.events, publisher=publisher, project=project
        )
        if result is not None:
            return Appended(decision.value, result)
        if on_conflict is not None:
            await on_conflict()
    raise ConflictRetriesExhausted(stream_id, max_retries)


async def append_at_head(
    store: EventStore,
    stream_id: str,
    events: Sequence[NewEvent],
    *,
    publisher: Publisher | None = None,
    project: Project | None = None,
    max_retries: int = MAX_CONFLICT_RETRIES,
) -> AppendResult:
    """Append events that do not depend on the stream's content at its current version, re-reading the
    version after a conflict (deterministic event ids make a repeat of committed events a no-op)."""

    async def at_current_version() -> AppendDecision[int]:
        version = await store.stream_version(stream_id)
        return AppendDecision(version, events, version)

    done = await append_with_retry(
        store, stream_id, at_current_version, publisher=publisher, project=project, max_retries=max_retries
    )
    # No events: what the store answers for an empty append (nothing written, the version read).
    return done.result if done.result is not None else AppendResult(stream_id, version=done.value)
