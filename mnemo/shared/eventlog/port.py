"""The event log port: an append-only store of events per stream with optimistic concurrency.

Contract (every adapter passes ``tests/contract/test_eventlog_contract.py``):

- ``append(stream, expected_version, events)`` writes versions ``expected+1 ..``. If another writer got
  there first it raises :class:`ConcurrencyError` (callers reload and retry). Each event is atomic; a
  multi-event append is ordered and a retry of the same events completes it.
- Idempotency: an event whose ``event_id`` is already in the log is not written again and is reported in
  ``AppendResult.duplicates``; re-appending an already committed batch is therefore a no-op, never a
  conflict.
- Reads return events upcast to the current schema version with user text decrypted.
- Every committed event is eventually published (see ``relay.py``): ``unpublished`` lists events whose
  publish was not confirmed, ``mark_published`` confirms them. Both are insert-only on MongoDB (no update
  per event): see ``unpublished`` and :data:`OUTBOX_MARGIN_S`.
- No multi-document transactions and no change streams are needed, so the log runs on MongoDB standalone,
  replica sets, Atlas and SecantusDB.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from mnemo.shared.eventlog.codec import StoredDoc
from mnemo.shared.events.envelope import EventEnvelope, NewEvent

OUTBOX_MARGIN_S = 5.0
"""How far behind its outbox watermark ``unpublished`` still looks, in seconds.

Each ``unpublished`` call raises a persisted watermark (to ``now - min_age_s``, or to the oldest event it
still reports) and the next call only looks at events recorded after ``watermark - OUTBOX_MARGIN_S``. The
assumption this encodes: an append becomes visible to readers within ``min_age_s + OUTBOX_MARGIN_S`` of its
``recorded_at`` (taken just before the write), and the clocks of appenders and relays on different
machines differ by less than that. An event breaking it (say a writer frozen mid-append for ten seconds,
then crashing before its own publish) would not be recovered.
"""


class EventLogError(Exception):
    pass


class ConcurrencyError(EventLogError):
    """Another writer appended to the stream since ``expected_version`` was read."""

    def __init__(self, stream_id: str, expected_version: int, actual_version: int | None = None) -> None:
        self.stream_id = stream_id
        self.expected_version = expected_version
        self.actual_version = actual_version
        super().__init__(
            f"stream {stream_id!r}: expected version {expected_version}, found {actual_version}"
            if actual_version is not None
            else f"stream {stream_id!r}: version {expected_version + 1} already taken"
        )


@dataclass(frozen=True)
class Append:
    stream_id: str
    expected_version: int
    events: Sequence[NewEvent]


@dataclass
class AppendResult:
    stream_id: str
    committed: list[EventEnvelope] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)  # event ids already in the log
    version: int = 0  # the stream's version after this append
    # ``committed`` as written (encrypted, the codec's stored form), in the same order: what the relay
    # publishes, so a fresh append is not encrypted a second time for the bus.
    stored: list[StoredDoc] = field(default_factory=list)


class EventStore(Protocol):
    async def append(self, stream_id: str, expected_version: int, events: Sequence[NewEvent]) -> AppendResult: ...

    async def append_batch(self, appends: Sequence[Append]) -> list[AppendResult | ConcurrencyError]:
        """Many streams in as few round trips as the backend allows; one result per append, in order."""
        ...

    async def stream_version(self, stream_id: str) -> int:
        """0 for a stream with no events."""
        ...

    async def stream_versions(self, stream_ids: Sequence[str]) -> dict[str, int]: ...

    async def read_stream(
        self, stream_id: str, after_version: int = 0, limit: int | None = None
    ) -> list[EventEnvelope]: ...

    async def read_stream_backwards(self, stream_id: str, limit: int) -> list[EventEnvelope]:
        """The last ``limit`` events, newest first."""
        ...

    async def get_events(self, event_ids: Sequence[str]) -> list[EventEnvelope]: ...

    def read_all(self, batch_size: int = 1000) -> AsyncIterator[EventEnvelope]:
        """Every event once, each stream in version order (used by ``mnemo replay``)."""
        ...

    async def unpublished(self, min_age_s: float, limit: int, *, grace_s: float = 0.0) -> list[EventEnvelope]:
        """Up to ``limit`` committed events, oldest first, recorded at least ``min_age_s`` seconds ago and
        not confirmed by ``mark_published``. With ``grace_s`` (the relay's recovery loop), events still being
        published are left out for up to ``grace_s`` after they were recorded: this store's own appends whose
        publish was neither confirmed nor reported failed, and (MongoDB) those of a writer whose recovery loop
        is alive (``mnemo.shared.eventlog.outbox``).

        Events committed before a crash, by any store instance on the same database, are listed until
        confirmed. Each call moves the persisted watermark (see :data:`OUTBOX_MARGIN_S`), so a round that
        finds nothing is cheap, and an event recorded more than the margin before the watermark (which
        breaks the stated assumption) is no longer looked for.
        """
        ...

    async def mark_published(self, event_ids: Sequence[str]) -> None:
        """Confirm that these events reached JetStream. Idempotent; unknown ids are ignored. Confirming
        before the event is listed, or twice, is harmless."""
        ...

    async def publish_failed(self, event_ids: Sequence[str]) -> None:
        """The fast path could not publish these: the recovery loop may take them without ``grace_s``."""
        ...
