"""``mnemo.shared.eventlog.save.EventSaver``: decide, append at the decided version, retry on a lost race (one
stream, or only the losers of a batch), project, then publish only what committed; on a failure after a commit
the committed events go to the relay's recovery at once."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pydantic import BaseModel

from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore
from mnemo.shared.eventlog.codec import EventCodec, StoredDoc
from mnemo.shared.eventlog.inmemory import InMemoryEventStore
from mnemo.shared.eventlog.port import Append, AppendResult, ConcurrencyError
from mnemo.shared.eventlog.save import (
    MAX_CONFLICT_RETRIES,
    AppendDecision,
    ConflictRetriesExhausted,
    EventSaver,
)
from mnemo.shared.events.envelope import EventEnvelope, EventRegistry, NewEvent

STREAM = "notes/t1"


class Note(BaseModel):
    text: str


class CountingStore(InMemoryEventStore):
    """Counts ``append_batch`` round trips."""

    batches: int = 0

    async def append_batch(self, appends: Sequence[Append]) -> list[AppendResult | ConcurrencyError]:
        self.batches += 1
        return await super().append_batch(appends)


def store() -> CountingStore:
    registry = EventRegistry()
    registry.register("note.taken", Note, encrypted=("text",))
    return CountingStore(EventCodec(registry, FieldCipher(bytes(range(32)), InMemoryKeyStore())))


def note(text: str, event_id: str | None = None) -> NewEvent:
    extra = {"event_id": event_id} if event_id else {}
    return NewEvent(type="note.taken", tenant_id="t1", payload={"text": text}, **extra)


class RecordingPublisher:
    def __init__(self) -> None:
        self.published: list[str] = []

    async def publish_committed(self, events: Sequence[EventEnvelope | StoredDoc]) -> None:
        self.published += [e.event_id if isinstance(e, EventEnvelope) else e["event_id"] for e in events]


def saver() -> tuple[CountingStore, RecordingPublisher, EventSaver]:
    s, pub = store(), RecordingPublisher()
    return s, pub, EventSaver(s, pub)


async def in_recovery(s: InMemoryEventStore) -> list[str]:
    """What a recovery round with a grace period lists now (events still held as being published are not)."""
    return [e.event_id for e in await s.unpublished(min_age_s=0, limit=100, grace_s=60)]


async def test_first_attempt_holds() -> None:
    s, pub, save = saver()
    projected: list[list[str]] = []

    async def decide() -> AppendDecision[str]:
        return AppendDecision(await s.stream_version(STREAM), [note("a", "e1")], "done")

    async def project(committed: Sequence[EventEnvelope]) -> None:
        projected.append([e.event_id for e in committed])

    done = await save.save_decided(STREAM, decide, project=project)
    assert done.value == "done"
    assert done.result is not None
    assert [e.event_id for e in done.result.committed] == ["e1"]
    assert projected == [["e1"]]
    assert pub.published == ["e1"]


async def test_conflict_then_success_decides_again() -> None:
    s, pub, save = saver()
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

    done = await save.save_decided(STREAM, decide, on_conflict=on_conflict)
    assert seen == [0, 1]
    assert conflicts == [1]
    assert done.value == 1
    assert pub.published == ["e-2"]
    assert [e.event_id for e in await s.read_stream(STREAM)] == ["e0", "e-2"]


async def test_exhaustion_raises_and_publishes_nothing() -> None:
    s, pub, save = saver()
    await s.append(STREAM, 0, [note("taken", "e0")])
    attempts: list[int] = []
    projected: list[Sequence[EventEnvelope]] = []

    async def always_stale() -> AppendDecision[None]:
        attempts.append(1)
        return AppendDecision(0, [note("late", f"late-{len(attempts)}")], None)

    async def project(committed: Sequence[EventEnvelope]) -> None:
        projected.append(committed)

    with pytest.raises(ConflictRetriesExhausted) as info:
        await save.save_decided(STREAM, always_stale, project=project)
    assert isinstance(info.value, ConcurrencyError)  # callers handling the store's error still handle it
    assert info.value.stream_id == STREAM
    assert info.value.attempts == MAX_CONFLICT_RETRIES
    assert "after 5 attempt(s)" in str(info.value)
    assert len(attempts) == MAX_CONFLICT_RETRIES
    assert pub.published == []
    assert projected == []
    assert [e.event_id for e in await s.read_stream(STREAM)] == ["e0"]


async def test_max_retries_bounds_the_attempts() -> None:
    s, _, save = saver()
    await s.append(STREAM, 0, [note("taken")])
    attempts: list[int] = []

    async def always_stale() -> AppendDecision[None]:
        attempts.append(1)
        return AppendDecision(0, [note("late")], None)

    with pytest.raises(ConflictRetriesExhausted):
        await save.save_decided(STREAM, always_stale, max_retries=2)
    assert len(attempts) == 2


async def test_a_decision_without_events_appends_nothing() -> None:
    s, pub, save = saver()

    async def nothing_to_do() -> AppendDecision[str]:
        return AppendDecision(0, [], "unchanged")

    done = await save.save_decided(STREAM, nothing_to_do)
    assert done.value == "unchanged"
    assert done.result is None
    assert pub.published == []
    assert await s.stream_version(STREAM) == 0


async def test_decide_errors_propagate_without_appending() -> None:
    s, _, save = saver()

    async def refuse() -> AppendDecision[None]:
        raise LookupError("no such thing")

    with pytest.raises(LookupError):
        await save.save_decided(STREAM, refuse)
    assert await s.stream_version(STREAM) == 0


async def test_save_at_head_rereads_the_version_and_dedupes_repeats() -> None:
    s, pub, save = saver()
    await s.append(STREAM, 0, [note("first", "e0")])
    result = await save.save_at_head(STREAM, [note("second", "e1")])
    assert result.version == 2
    assert pub.published == ["e1"]
    projected: list[list[str]] = []

    async def project(committed: Sequence[EventEnvelope]) -> None:
        projected.append([e.event_id for e in committed])

    again = await save.save_at_head(STREAM, [note("second", "e1")], project=project)
    assert again.committed == []
    assert again.duplicates == ["e1"]
    assert pub.published == ["e1"]  # a duplicate is not published again
    assert projected == [[]]  # but projected (nothing new): a retry after a crash heals the read model


async def test_save_at_reports_a_lost_race_as_none() -> None:
    s, pub, save = saver()
    await s.append(STREAM, 0, [note("taken", "e0")])
    assert await save.save_at(STREAM, 0, [note("late", "e1")]) is None
    assert pub.published == []
    won = await save.save_at(STREAM, 1, [note("on time", "e2")])
    assert won is not None
    assert pub.published == ["e2"]


async def test_a_failed_projection_publishes_nothing_and_hands_the_events_to_recovery() -> None:
    s, pub, save = saver()

    async def failing(_: Sequence[EventEnvelope]) -> None:
        raise RuntimeError("the read model is down")

    with pytest.raises(RuntimeError):
        await save.save_at_head(STREAM, [note("a", "e1")], project=failing)
    assert pub.published == []
    assert await in_recovery(s) == ["e1"]


# --- many streams -------------------------------------------------------------------------------------------


async def test_a_batch_retries_only_the_streams_that_lost_one_append_batch_per_attempt() -> None:
    s, pub, save = saver()
    await s.append("b", 0, [note("other writer", "b0")])
    asked: list[list[str] | None] = []
    caught_up: list[list[str]] = []
    versions = {"a": 0, "b": 0}  # b's is stale: it loses the first attempt

    async def decide(only: Sequence[str] | None) -> list[Append]:
        asked.append(None if only is None else list(only))
        streams = ["a", "b"] if only is None else list(only)
        return [Append(sid, versions[sid], [note(sid, f"{sid}-{len(asked)}")]) for sid in streams]

    async def catch_up(lost: Sequence[str]) -> None:
        caught_up.append(list(lost))
        versions.update(await s.stream_versions(lost))

    projected: list[list[str]] = []

    async def project(committed: Sequence[EventEnvelope]) -> None:
        projected.append([e.event_id for e in committed])

    saved = await save.save_many(decide, on_conflict=catch_up, project=project)
    assert asked == [None, ["b"]]
    assert caught_up == [["b"]]
    assert s.batches == 2
    assert saved.unsettled == []
    assert sorted(saved.results) == ["a", "b"]
    assert projected == [["a-1", "b-2"]]  # once, after every attempt
    assert pub.published == ["a-1", "b-2"]
    assert [e.event_id for e in await s.read_stream("b")] == ["b0", "b-2"]


async def test_a_batch_that_keeps_losing_publishes_what_committed_then_raises() -> None:
    s, pub, save = saver()
    await s.append("b", 0, [note("taken", "b0")])

    async def decide(only: Sequence[str] | None) -> list[Append]:
        streams = ["a", "b"] if only is None else list(only)
        return [Append(sid, 0, [note(sid, f"{sid}-new")]) for sid in streams]  # b's version stays stale

    with pytest.raises(ConflictRetriesExhausted) as info:
        await save.save_many(decide)
    assert info.value.stream_id == "b"
    assert s.batches == MAX_CONFLICT_RETRIES
    assert pub.published == ["a-new"]


async def test_append_many_holds_the_publish_for_the_second_stage() -> None:
    _, pub, save = saver()

    async def decide(only: Sequence[str] | None) -> list[Append]:
        return [Append("a", 0, [note("a", "a1")]), Append("c", 0, [])]  # nothing for c: not appended

    saved = await save.append_many(decide)
    assert pub.published == []
    assert [e.event_id for e in saved.committed] == ["a1"]
    assert list(saved.results) == ["a"]
    await save.publish(saved)
    assert pub.published == ["a1"]


async def test_a_batch_failing_after_a_commit_hands_the_committed_events_to_recovery() -> None:
    s, pub, save = saver()
    await s.append("b", 0, [note("taken", "b0")])
    await s.mark_published(["b0"])

    async def decide(only: Sequence[str] | None) -> list[Append]:
        return [Append("a", 0, [note("a", "a1")]), Append("b", 0, [note("b", "b1")])]

    async def catch_up(_: Sequence[str]) -> None:
        raise RuntimeError("the log went away")

    with pytest.raises(RuntimeError):
        await save.append_many(decide, on_conflict=catch_up)
    assert pub.published == []
    assert await in_recovery(s) == ["a1"]  # not held for the grace period: no publish is coming


async def test_a_failed_batch_projection_hands_the_events_to_recovery() -> None:
    s, pub, save = saver()

    async def decide(only: Sequence[str] | None) -> list[Append]:
        return [Append("a", 0, [note("a", "a1")])]

    async def failing(_: Sequence[EventEnvelope]) -> None:
        raise RuntimeError("the read model is down")

    saved = await save.append_many(decide)
    assert await in_recovery(s) == []  # held: its publish is on its way
    with pytest.raises(RuntimeError):
        await save.publish(saved, project=failing)
    assert pub.published == []
    assert await in_recovery(s) == ["a1"]
