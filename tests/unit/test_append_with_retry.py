"""``mnemo.shared.eventlog.append``: decide, append at the decided version, retry on a lost race, publish only
what committed."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pydantic import BaseModel

from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore
from mnemo.shared.eventlog.append import (
    MAX_CONFLICT_RETRIES,
    AppendDecision,
    ConflictRetriesExhausted,
    append_at_head,
    append_with_retry,
    try_append,
)
from mnemo.shared.eventlog.codec import EventCodec, StoredDoc
from mnemo.shared.eventlog.inmemory import InMemoryEventStore
from mnemo.shared.eventlog.port import AppendResult, ConcurrencyError
from mnemo.shared.events.envelope import EventEnvelope, EventRegistry, NewEvent

STREAM = "notes/t1"


class Note(BaseModel):
    text: str


def store() -> InMemoryEventStore:
    registry = EventRegistry()
    registry.register("note.taken", Note, encrypted=("text",))
    return InMemoryEventStore(EventCodec(registry, FieldCipher(bytes(range(32)), InMemoryKeyStore())))


def note(text: str, event_id: str | None = None) -> NewEvent:
    extra = {"event_id": event_id} if event_id else {}
    return NewEvent(type="note.taken", tenant_id="t1", payload={"text": text}, **extra)


class RecordingPublisher:
    def __init__(self) -> None:
        self.published: list[str] = []

    async def publish_committed(self, events: Sequence[EventEnvelope | StoredDoc]) -> None:
        self.published += [e.event_id if isinstance(e, EventEnvelope) else e["event_id"] for e in events]


async def test_first_attempt_holds() -> None:
    s, pub = store(), RecordingPublisher()
    projected: list[AppendResult] = []

    async def decide() -> AppendDecision[str]:
        return AppendDecision(await s.stream_version(STREAM), [note("a", "e1")], "done")

    async def project(result: AppendResult) -> None:
        projected.append(result)

    done = await append_with_retry(s, STREAM, decide, publisher=pub, project=project)
    assert done.value == "done"
    assert done.result is not None
    assert [e.event_id for e in done.result.committed] == ["e1"]
    assert projected == [done.result]
    assert pub.published == ["e1"]


async def test_conflict_then_success_decides_again() -> None:
    s, pub = store(), RecordingPublisher()
    await s.append(STREAM, 0, [note("other writer", "e0")])
    seen: list[int] = []
    conflicts: list[int] = []

    async def decide() -> AppendDecision[int]:
        # The first decision is based on a stale read (version 0); the retry reads the real version.
        version = 0 if not seen else await s.stream_version(STREAM)
        seen.append(version)
        return AppendDecision(version, [note("mine", f"e-{len(seen)}")], version)

    async def on_conflict() -> None:
        conflicts.append(len(seen))

    done = await append_with_retry(s, STREAM, decide, publisher=pub, on_conflict=on_conflict)
    assert seen == [0, 1]
    assert conflicts == [1]
    assert done.value == 1
    assert pub.published == ["e-2"]
    assert [e.event_id for e in await s.read_stream(STREAM)] == ["e0", "e-2"]


async def test_exhaustion_raises_and_publishes_nothing() -> None:
    s, pub = store(), RecordingPublisher()
    await s.append(STREAM, 0, [note("taken", "e0")])
    attempts: list[int] = []
    projected: list[AppendResult] = []

    async def always_stale() -> AppendDecision[None]:
        attempts.append(1)
        return AppendDecision(0, [note("late", f"late-{len(attempts)}")], None)

    async def project(result: AppendResult) -> None:
        projected.append(result)

    with pytest.raises(ConflictRetriesExhausted) as info:
        await append_with_retry(s, STREAM, always_stale, publisher=pub, project=project)
    assert isinstance(info.value, ConcurrencyError)  # callers handling the store's error still handle it
    assert info.value.stream_id == STREAM
    assert info.value.attempts == MAX_CONFLICT_RETRIES
    assert "after 5 attempt(s)" in str(info.value)
    assert len(attempts) == MAX_CONFLICT_RETRIES
    assert pub.published == []
    assert projected == []
    assert [e.event_id for e in await s.read_stream(STREAM)] == ["e0"]


async def test_max_retries_bounds_the_attempts() -> None:
    s = store()
    await s.append(STREAM, 0, [note("taken")])
    attempts: list[int] = []

    async def always_stale() -> AppendDecision[None]:
        attempts.append(1)
        return AppendDecision(0, [note("late")], None)

    with pytest.raises(ConflictRetriesExhausted):
        await append_with_retry(s, STREAM, always_stale, max_retries=2)
    assert len(attempts) == 2


async def test_a_decision_without_events_appends_nothing() -> None:
    s, pub = store(), RecordingPublisher()

    async def nothing_to_do() -> AppendDecision[str]:
        return AppendDecision(0, [], "unchanged")

    done = await append_with_retry(s, STREAM, nothing_to_do, publisher=pub)
    assert done.value == "unchanged"
    assert done.result is None
    assert pub.published == []
    assert await s.stream_version(STREAM) == 0


async def test_decide_errors_propagate_without_appending() -> None:
    s = store()

    async def refuse() -> AppendDecision[None]:
        raise LookupError("no such thing")

    with pytest.raises(LookupError):
        await append_with_retry(s, STREAM, refuse)
    assert await s.stream_version(STREAM) == 0


async def test_append_at_head_rereads_the_version_and_dedupes_repeats() -> None:
    s, pub = store(), RecordingPublisher()
    await s.append(STREAM, 0, [note("first", "e0")])
    result = await append_at_head(s, STREAM, [note("second", "e1")], publisher=pub)
    assert result.version == 2
    assert pub.published == ["e1"]
    again = await append_at_head(s, STREAM, [note("second", "e1")], publisher=pub)
    assert again.committed == []
    assert again.duplicates == ["e1"]
    assert pub.published == ["e1"]  # a duplicate is not published again


async def test_try_append_reports_a_lost_race_as_none() -> None:
    s, pub = store(), RecordingPublisher()
    await s.append(STREAM, 0, [note("taken", "e0")])
    assert await try_append(s, STREAM, 0, [note("late", "e1")], publisher=pub) is None
    assert pub.published == []
    won = await try_append(s, STREAM, 1, [note("on time", "e2")], publisher=pub)
    assert won is not None
    assert pub.published == ["e2"]
