"""The one door into the log: a unit of work that appends decided events, projects what committed, publishes it.

Every writer of mnemo does the same thing: load what its stream (or read model) says, decide the new events
with a pure function, append them at the version that decision was based on; when another writer got there
first (:class:`ConcurrencyError`) load and decide again, at most :data:`MAX_CONFLICT_RETRIES` times, then give
up with :class:`ConflictRetriesExhausted`. :class:`EventSaver` is that loop, once, for one stream
(``save_decided``, ``save_at_head``, ``save_at``) and for many streams in one ``append_batch`` per attempt that
retries only the streams that lost (``append_many`` then ``publish``, or ``save_many``). Whatever the door:

- only committed events are projected and published, only after their append, and a lost attempt publishes
  nothing (a lost stream's committed prefix is not returned by the store: recovery takes it);
- the caller's ``project`` runs first (the caller's next step may read its read model), then the relay's fast
  path publishes the committed events as the store wrote them (``AppendResult.stored``: not encrypted twice);
- on any failure after a commit (projection, a later attempt, a catch-up) the committed ids go to the relay's
  recovery at once (``EventStore.publish_failed``) instead of waiting out its grace for a publish that will
  not come. Deterministic event ids make a retry of committed events a duplicate, never a second event.

Services get theirs as ``Deps.saver`` and never call ``append``/``append_batch``/``publish_committed``
themselves (tests/unit/test_layout.py).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from mnemo.shared.eventlog.codec import StoredDoc
from mnemo.shared.eventlog.port import Append, AppendResult, ConcurrencyError, EventStore
from mnemo.shared.events.envelope import EventEnvelope, NewEvent

log = logging.getLogger(__name__)

MAX_CONFLICT_RETRIES = 5
"""Attempts per save before giving up: a conflict means another writer just changed the stream, so a few
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
    """What the saver needs of ``mnemo.shared.deps.CommittedPublisher`` (the relay's fast path)."""

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


@dataclass
class Saved:
    """A batch over many streams between its append and its publish (``EventSaver.append_many``)."""

    results: dict[str, AppendResult] = field(default_factory=dict)  # per stream whose append held
    unsettled: list[str] = field(default_factory=list)  # streams that lost every attempt
    committed: list[EventEnvelope] = field(default_factory=list)  # in append order
    stored: list[StoredDoc] = field(default_factory=list)  # ``committed`` as written: what the relay publishes

    def add(self, result: AppendResult) -> None:
        self.results[result.stream_id] = result
        self.committed.extend(result.committed)
        self.stored.extend(result.stored)


#: Folds what an append committed into the caller's read model (called even when it committed nothing new).
Project = Callable[[Sequence[EventEnvelope]], Awaitable[None]]
#: A batch's decision: the appends of every stream (None: first attempt) or of the streams that lost (in order).
DecideMany = Callable[[Sequence[str] | None], Awaitable[Sequence[Append]]]
#: Brings the streams that lost their race up to the log before the next decision (and after the last).
CatchUp = Callable[[Sequence[str]], Awaitable[None]]


class EventSaver:
    """The unit of work over one event store and the relay's fast path (``publisher``; None: recovery only)."""

    def __init__(
        self, store: EventStore, publisher: Publisher | None, *, max_retries: int = MAX_CONFLICT_RETRIES
    ) -> None:
        self.store = store
        self.publisher = publisher
        self.max_retries = max_retries

    # --- one stream -------------------------------------------------------------------------------------
    async def save_at(
        self, stream_id: str, expected_version: int, events: Sequence[NewEvent], *, project: Project | None = None
    ) -> AppendResult | None:
        """One attempt at a known version: append, project, publish. None when another writer got there first
        (nothing projected or published)."""
        try:
            result = await self.store.append(stream_id, expected_version, events)
        except ConcurrencyError:
            return None
        await self._publish(result.committed, result.stored, project)
        return result

    async def save_decided(
        self,
        stream_id: str,
        decide: Callable[[], Awaitable[AppendDecision[R]]],
        *,
        project: Project | None = None,
        on_conflict: Callable[[], Awaitable[None]] | None = None,
        max_retries: int | None = None,
    ) -> Appended[R]:
        """Decide (``decide`` loads what it needs each time) and save until an attempt holds.

        A decision with no events ends the loop without an append. ``on_conflict`` runs after a lost race,
        before deciding again (e.g. to bring a read model up to the log). Raises what ``decide`` raises, and
        :class:`ConflictRetriesExhausted` after ``max_retries`` lost races."""
        attempts = max_retries or self.max_retries
        for _ in range(attempts):
            decision = await decide()
            if not decision.events:
                return Appended(decision.value, None)
            result = await self.save_at(stream_id, decision.expected_version, decision.events, project=project)
            if result is not None:
                return Appended(decision.value, result)
            if on_conflict is not None:
                await on_conflict()
        raise ConflictRetriesExhausted(stream_id, attempts)

    async def save_at_head(
        self, stream_id: str, events: Sequence[NewEvent], *, project: Project | None = None
    ) -> AppendResult:
        """Save events that do not depend on the stream's content at its current version, re-reading the
        version after a conflict (deterministic event ids make a repeat of committed events a no-op)."""

        async def at_current_version() -> AppendDecision[int]:
            version = await self.store.stream_version(stream_id)
            return AppendDecision(version, events, version)

        done = await self.save_decided(stream_id, at_current_version, project=project)
        # No events: what the store answers for an empty append (nothing written, the version read).
        return done.result if done.result is not None else AppendResult(stream_id, version=done.value)

    # --- many streams -----------------------------------------------------------------------------------
    async def append_many(
        self, decide: DecideMany, *, on_conflict: CatchUp | None = None, max_attempts: int | None = None
    ) -> Saved:
        """Stage 1 of a batch: every stream's decided events in ONE ``append_batch`` per attempt; the streams
        that lost are caught up (``on_conflict``, after every lost attempt) and decided again, the others are
        not touched again. Nothing is projected or published yet: :meth:`publish` does that (ingest begins the
        next batch in between). Streams still losing after ``max_attempts`` are ``Saved.unsettled``; what the
        others committed stands. If anything raises, what had committed goes to the relay's recovery."""
        saved = Saved()
        only: Sequence[str] | None = None
        try:
            for attempt in range(1, (max_attempts or self.max_retries) + 1):
                appends = [a for a in await decide(only) if a.events]
                if not appends:
                    saved.unsettled = []
                    break
                lost = []
                for append, result in zip(appends, await self.store.append_batch(appends), strict=True):
                    if isinstance(result, ConcurrencyError):
                        lost.append(append.stream_id)
                    else:
                        saved.add(result)
                saved.unsettled = lost
                if not lost:
                    break
                log.info("attempt %d: %d stream(s) lost a concurrency race; catching up", attempt, len(lost))
                if on_conflict is not None:
                    await on_conflict(lost)
                only = lost
        except BaseException:
            await self.abandon(saved)
            raise
        return saved

    async def publish(self, saved: Saved, *, project: Project | None = None) -> None:
        """Stage 2 of a batch: project what it committed, then publish it."""
        await self._publish(saved.committed, saved.stored, project)

    async def abandon(self, saved: Saved) -> None:
        """No publish will follow for what ``saved`` committed (its caller failed): recovery takes it now."""
        if saved.committed:
            await self.store.publish_failed([e.event_id for e in saved.committed])

    async def save_many(
        self, decide: DecideMany, *, on_conflict: CatchUp | None = None, project: Project | None = None
    ) -> Saved:
        """:meth:`append_many` then :meth:`publish`; raises :class:`ConflictRetriesExhausted` after publishing
        what did commit when some stream kept losing."""
        saved = await self.append_many(decide, on_conflict=on_conflict)
        await self.publish(saved, project=project)
        if saved.unsettled:
            raise ConflictRetriesExhausted(saved.unsettled[0], self.max_retries)
        return saved

    # --- the commit's second half -----------------------------------------------------------------------
    async def _publish(
        self, committed: Sequence[EventEnvelope], stored: Sequence[StoredDoc], project: Project | None
    ) -> None:
        if project is not None:
            try:
                await project(committed)
            except BaseException:  # no fast path will come for what was committed: the relay's loop takes it now
                await self.store.publish_failed([e.event_id for e in committed])
                raise
        if self.publisher is not None and committed:
            await self.publisher.publish_committed(stored)
