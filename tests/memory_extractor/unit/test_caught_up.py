"""``ReadModelCatchUp`` on the in-memory log and knowledge read model: the version a decision appends at is
one the read model holds every event through, positions are remembered in the process and recorded for the
next one every ``RECORD_EVERY`` versions."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from mnemo.services.memory_extractor import caught_up
from mnemo.services.memory_extractor.caught_up import ReadModelCatchUp
from mnemo.shared.events.envelope import EventEnvelope, NewEvent
from mnemo.shared.events.recorded import knowledge_stream
from mnemo.shared.readmodels.inmemory import InMemoryKnowledge
from tests.components import deps

T = "t1"
STREAM = knowledge_stream(T, "bard")


def witnessed(i: int) -> NewEvent:
    payload = {"user_id": "u1", "conversation_id": "c1", "message_ids": [f"m{i}"], "character_id": "bard",
               "character_kind": "bot", "at": datetime(2026, 3, 1, tzinfo=UTC)}  # fmt: skip
    return NewEvent(event_id=f"w{i}", type="knowledge.witnessed", tenant_id=T, payload=payload)


def reads_of(store: Any) -> list[int]:
    """The ``after_version`` of each ``read_stream`` call on ``store`` from now on."""
    reads: list[int] = []
    read_stream = store.read_stream

    async def recording(stream_id: str, after_version: int = 0, limit: int | None = None) -> list[EventEnvelope]:
        reads.append(after_version)
        return await read_stream(stream_id, after_version, limit)

    store.read_stream = recording
    return reads


async def test_a_decision_version_is_the_log_version_and_later_ones_read_only_what_is_new(monkeypatch):
    monkeypatch.setattr(caught_up, "RECORD_EVERY", 3)
    d, knowledge = deps(), InMemoryKnowledge()
    catch_up = ReadModelCatchUp(d.store, knowledge)
    await d.store.append(STREAM, 0, [witnessed(i) for i in range(2)])

    assert await catch_up.at_log(T, [STREAM]) == {STREAM: 2}
    assert await knowledge.caught_up(T, [STREAM]) == {STREAM: 0}, "not recorded before RECORD_EVERY versions"
    await d.store.append(STREAM, 2, [witnessed(2)])
    assert await catch_up.at_log(T, [STREAM]) == {STREAM: 3}
    assert await knowledge.caught_up(T, [STREAM]) == {STREAM: 3}, "recorded once it moved RECORD_EVERY"

    result = await d.store.append(STREAM, 3, [witnessed(3)])
    await catch_up.appended(T, [result])
    reads = reads_of(d.store)
    assert await catch_up.at_log(T, [STREAM]) == {STREAM: 4}
    assert reads == [4], "its own append, projected, is not read back"
    assert await ReadModelCatchUp(d.store, knowledge).at_log(T, [STREAM]) == {STREAM: 4}
    assert reads[1] == 3, "another process starts from the recorded position"


async def test_an_append_that_found_its_events_already_in_the_log_moves_nothing():
    d, knowledge = deps(), InMemoryKnowledge()
    catch_up = ReadModelCatchUp(d.store, knowledge)
    assert await catch_up.at_log(T, [STREAM]) == {STREAM: 0}
    await d.store.append(STREAM, 0, [witnessed(0)])  # another writer's, perhaps not projected yet
    again = await d.store.append(STREAM, 0, [witnessed(0)])
    assert again.duplicates == ["w0"]
    await catch_up.appended(T, [again])
    reads = reads_of(d.store)
    assert await catch_up.at_log(T, [STREAM]) == {STREAM: 1}
    assert reads == [0], "the other's event is read and applied"


async def test_past_the_streams_it_remembers_it_forgets_them_and_reads_their_recorded_positions(monkeypatch):
    monkeypatch.setattr(caught_up, "REMEMBERED", 1)
    d, knowledge = deps(), InMemoryKnowledge()
    catch_up = ReadModelCatchUp(d.store, knowledge)
    other = knowledge_stream(T, "rook")
    await d.store.append(STREAM, 0, [witnessed(0)])
    assert await catch_up.at_log(T, [STREAM, other]) == {STREAM: 1, other: 0}
    third = knowledge_stream(T, "mage")
    assert await catch_up.at_log(T, [STREAM, third]) == {STREAM: 1, third: 0}, "all forgotten, read again"
