"""The summarizer on the in-memory log and summaries read model, with the bundled embedder (no server).

Driven as the relay would: the conversation's new events go to ``Summarizer.on_batch``, then the summary
events it appended (which feed its read model). Thresholds, presence-aware audiences, idempotent redelivery,
the stale/recompute cycle of edits, and rejected payloads.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mnemo.services.summarizer.handlers import Summarizer
from mnemo.services.summarizer.settings import SummarizerSettings
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.events.envelope import EventEnvelope, NewEvent
from mnemo.shared.events.recorded import SummaryCreated, conversation_stream, summary_stream
from mnemo.shared.readmodels.inmemory import InMemorySummaries
from tests.components import deps, items
from tests.envelopes import message_edited
from tests.summarizer.feed import Feed

T0 = datetime(2026, 3, 1, tzinfo=UTC)
T, U, C = "t1", "u1", "c1"
CONV, SUMS = conversation_stream(T, U, C), summary_stream(T, U, C)
DEEDS = ["found a silver key", "sang about the old war", "hid a letter", "lost the map", "promised to return"]
PLACES = ["at the harbour", "in the chapel", "near the mill", "on the north road", "under the bridge"]


def line(i: int) -> str:
    return f"Ana {DEEDS[i % len(DEEDS)]} {PLACES[(i * 3) % len(PLACES)]}. It was turn {i}."


def message(i: int, bots: list[str], text: str | None = None) -> NewEvent:
    body = text or line(i)
    return NewEvent(
        type="message.recorded",
        tenant_id=T,
        payload={"user_id": U, "conversation_id": C, "message_id": f"m{i}", "role": "user" if i % 2 else "assistant",
                 "author_id": None, "author_name": "Ana" if i % 2 else "Bard", "content": body,
                 "created_at": T0 + timedelta(minutes=i), "bot_ids": bots, "persona_id": "ana", "index": i,
                 "tokens": len(body.split())},
    )  # fmt: skip


class Driver(Feed):
    def __init__(self, embedder: BundledEmbedder, **settings) -> None:
        self.deps = deps()
        self.summaries = InMemorySummaries()
        summarizer = Summarizer(
            self.deps.store, self.deps.saver, embedder, self.summaries, SummarizerSettings(**settings)
        )
        super().__init__(self.deps.store, summarizer, CONV, SUMS)

    async def add(self, indexes: range, bots: list[str]) -> list[EventEnvelope]:
        return await self.append([message(i, bots) for i in indexes])


def created(events: list[EventEnvelope]) -> list[SummaryCreated]:
    return [SummaryCreated.model_validate(e.payload) for e in events if e.type == "summary.created"]


async def test_the_first_summary_is_made_at_the_threshold(embedder):
    d = Driver(embedder, first_at=5, every=20)

    before = await d.add(range(4), ["bard"])
    at = await d.add(range(4, 5), ["bard"])

    assert before == []
    (summary,) = created(at)
    assert (summary.first_index, summary.last_index) == (0, 4)
    assert summary.message_ids == [f"m{i}" for i in range(5)]
    assert summary.summary_type == "short_term"
    assert summary.method == "extractive"
    assert summary.text, "an extractive summary quotes the range"
    assert any(fragment in summary.text for fragment in DEEDS)
    live = await d.summaries.live_summaries(T, U, C)
    assert [s.summary_id for s in live] == [summary.summary_id]


async def test_the_next_summary_comes_every_n_messages(embedder):
    d = Driver(embedder, first_at=5, every=10)

    made = created(await d.add(range(14), ["bard"]))
    later = created(await d.add(range(14, 15), ["bard"]))

    assert [(s.first_index, s.last_index) for s in made] == [(0, 4)]
    assert [(s.first_index, s.last_index) for s in later] == [(5, 14)]


async def test_redelivered_messages_make_no_second_summary(embedder):
    d = Driver(embedder, first_at=5, every=20)
    await d.add(range(5), ["bard"])
    written = await d.store.stream_version(SUMS)

    everything = await d.store.read_stream(CONV)
    assert await d.summarizer.on_batch(items(everything)) == []

    assert await d.store.stream_version(SUMS) == written == 1


async def test_a_summary_is_shown_only_to_characters_who_witnessed_its_messages(embedder):
    d = Driver(embedder, first_at=5, every=20)
    await d.add(range(3), ["bard", "rook"])

    made = created(await d.add(range(3, 5), ["bard"]))  # the rook has left

    assert made
    for s in made:
        if "rook" in s.audience:
            assert set(s.message_ids) <= {"m0", "m1", "m2"}
    assert any("bard" in s.audience and set(s.message_ids) == {f"m{i}" for i in range(5)} for s in made)
    for_rook = await d.summaries.live_summaries(T, U, C, audience_member="rook")
    assert all(set(s.message_ids) <= {"m0", "m1", "m2"} for s in for_rook)


async def test_editing_a_summarized_message_retires_the_summary_and_recomputes_it(embedder):
    d = Driver(embedder, first_at=5, every=20)
    (first,) = created(await d.add(range(5), ["bard"]))
    edit = message_edited(T, U, C, "m2", "Ana burned the map at dawn.", T0 + timedelta(hours=1), tokens=6)

    caused = await d.append([edit])

    retired = [e.payload for e in caused if e.type == "summary.retired"]
    assert [(r["summary_id"], r["reason"]) for r in retired] == [(first.summary_id, "stale")]
    (again,) = created(caused)
    assert retired[0]["replaced_by"] == again.summary_id
    assert (again.first_index, again.last_index) == (0, 4)
    assert await d.summaries.inactive(T, [first.summary_id]) == {first.summary_id}
    assert [s.summary_id for s in await d.summaries.live_summaries(T, U, C)] == [again.summary_id]


async def test_an_invalid_payload_is_rejected_with_the_reason(embedder):
    d = Driver(embedder)
    good = await d.store.append(CONV, 0, [message(0, ["bard"])])
    bad = good.committed[0].model_copy(update={"payload": {"user_id": U}})

    rejections = await d.summarizer.on_batch(items([bad]))

    assert len(rejections) == 1
    assert "invalid message.recorded payload" in rejections[0].reason
