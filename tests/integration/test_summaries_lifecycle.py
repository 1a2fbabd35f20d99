"""Summaries over a long conversation, against the real event log (SecantusDB) and relay (nats-server).

The summarizer is driven with the very envelopes the log holds, as the relay delivers them: first the
conversation's messages, then its own summary events (which feed the read model). Shown here: thresholds
(5, then every 20, and the token trigger), presence-aware audiences on real data, a bounded number of live
summaries over 2,000 messages (at most ``3 * max_active`` per audience), message ids that point at recorded
messages, and the stale/recompute cycle of edits and deletes.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mnemo.services.summarizer.handlers import Summarizer
from mnemo.services.summarizer.settings import SummarizerSettings
from mnemo.shared.aggregates.summaries import fold_live
from mnemo.shared.crypto import FieldCipher
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.eventlog.mongo import MongoEventStore
from mnemo.shared.eventlog.relay import Relay
from mnemo.shared.eventlog.save import EventSaver
from mnemo.shared.events.envelope import EventEnvelope, NewEvent
from mnemo.shared.events.recorded import EVERYONE, SummaryCreated, conversation_stream, summary_stream
from mnemo.shared.llm.openai import OpenAIChatModel
from mnemo.shared.readmodels.summaries import SummariesReadModel
from mnemo.shared.tokens import estimate_tokens
from tests.envelopes import message_deleted, message_edited
from tests.fakes.openai_server import CHAT_PATH, FakeOpenAIServer, chat_handler
from tests.integration.event_log import event_log, items
from tests.summarizer.feed import Feed

pytestmark = pytest.mark.integration
T0 = datetime(2026, 3, 1, tzinfo=UTC)
CONV = conversation_stream("t1", "u1", "c1")
SUMS = summary_stream("t1", "u1", "c1")
PEOPLE = ["the bard", "Ana", "the rook", "the miller", "a stranger", "the queen"]
DEEDS = ["found a silver key", "sang about the old war", "hid a letter", "lost the map", "promised to return"]
PLACES = ["at the harbour", "in the chapel", "near the mill", "on the north road", "under the bridge"]


TREASURE = [
    "Ana and the bard looked for the pirate treasure.",
    "The treasure is buried under the old oak by the chapel.",  # the secret, deleted later
    "The bard said the treasure map was torn.",
    "Ana asked where the pirate treasure was hidden.",
    "They agreed to dig for the treasure at night.",
]


def presence(i: int) -> list[str]:
    """The bard is always there; the rook is there for 100 messages, away for the next 100, and so on."""
    return ["bard", "rook"] if (i // 100) % 2 == 0 else ["bard"]


def content(i: int) -> str:
    rnd = random.Random(i)
    return f"{rnd.choice(PEOPLE).capitalize()} {rnd.choice(DEEDS)} {rnd.choice(PLACES)}. It was turn {i}."


def recorded(i: int, *, tokens: int | None = None, text: str | None = None) -> NewEvent:
    body = text or content(i)
    return NewEvent(
        type="message.recorded",
        tenant_id="t1",
        payload={
            "user_id": "u1", "conversation_id": "c1", "message_id": f"m{i}", "role": "user" if i % 2 else "assistant",
            "author_id": None, "author_name": "Ana" if i % 2 else "Bard", "content": body,
            "created_at": T0 + timedelta(minutes=i), "bot_ids": presence(i), "persona_id": "ana",
            "index": i, "tokens": tokens if tokens is not None else len(body.split()),
        },
    )  # fmt: skip


@pytest.fixture
async def env(mongo_db: Any, nats_url: str) -> AsyncIterator[tuple[MongoEventStore, Relay, FieldCipher]]:
    async with event_log(mongo_db, nats_url) as log:
        yield log.store, log.relay, log.cipher


def feed(store: MongoEventStore, summarizer: Summarizer) -> Feed:
    """Appends to the log and delivers the new events to the summarizer, the way the relay would."""
    return Feed(store, summarizer, CONV, SUMS)


def created(events: list[EventEnvelope]) -> list[SummaryCreated]:
    return [SummaryCreated.model_validate(e.payload) for e in events if e.type == "summary.created"]


async def test_two_thousand_messages_stay_bounded_and_point_at_real_messages(env, mongo_db):
    store, relay, cipher = env
    s = SummarizerSettings()
    summaries = SummariesReadModel(mongo_db, cipher)
    drive = feed(store, Summarizer(store, EventSaver(store, relay), BundledEmbedder(), summaries, s))

    # Thresholds: nothing before the 5th message, then a range 0-4; nothing new until the 25th.
    for i in range(25):
        new = created(await drive.append([recorded(i)]))
        closes = {4: (0, 4), 24: (5, 24)}.get(i)
        assert {(x.first_index, x.last_index) for x in new} == ({closes} if closes else set()), f"message {i}"

    worst = 0
    for start in range(25, 2_000, 25):
        await drive.append([recorded(i) for i in range(start, start + 25)])
        worst = max(worst, len(fold_live(await store.read_stream(SUMS)).by_id))

    log = await store.read_stream(SUMS)
    every = created(log)
    live = fold_live(log).summaries()
    audiences = Counter(tuple(x.audience) for x in live)
    bound = 3 * s.max_active * len(audiences)
    assert set(audiences) == {("bard", "rook", "ana"), ("bard", "ana"), ("rook",)}
    assert worst <= bound, f"{worst} live summaries at some point, bound {bound}"
    assert all(n <= 3 * s.max_active for n in audiences.values())
    assert len(every) > 3 * len(live), "most summaries were folded away"
    assert {x.summary_type for x in live} == {"short_term", "consolidated", "long_term"}

    # Ranges at the documented thresholds: 0-4, then 20 at a time; 1985-1999 still unsummarized.
    ranges = sorted({(x.first_index, x.last_index) for x in every if x.summary_type == "short_term"})
    assert ranges == [(0, 4)] + [(5 + 20 * k, 24 + 20 * k) for k in range(99)]

    # Every message id is a recorded message, witnessed by every audience member; nothing summarized is lost.
    messages = {e.payload["message_id"]: e.payload for e in await store.read_stream(CONV)}
    for x in every:
        assert set(x.message_ids) <= set(messages)
        for member in x.audience:
            assert member != EVERYONE
            for mid in x.message_ids:
                m = messages[mid]
                assert member in [*m["bot_ids"], m["persona_id"]], f"{x.summary_id}: {member} never saw {mid}"
    assert {mid for x in live for mid in x.message_ids} == {f"m{i}" for i in range(1985)}

    # The read model agrees with the log.
    views = await summaries.live_summaries("t1", "u1", "c1")
    assert {v.summary_id for v in views} == {x.summary_id for x in live}
    assert all(v.status == "active" for v in views)
    retired = await summaries.by_ids(
        "t1", [x.summary_id for x in every if x.summary_id not in {v.summary_id for v in views}]
    )
    assert retired
    assert {v.status for v in retired} == {"consolidated"}
    assert all(v.replaced_by for v in retired)
    rook = await summaries.live_summaries("t1", "u1", "c1", audience_member="rook")
    assert rook
    assert all("rook" in v.audience for v in rook)
    assert len(rook) < len(views)


async def test_the_token_trigger_closes_a_range_early(env, mongo_db):
    store, relay, cipher = env
    s = SummarizerSettings(token_trigger=1_000, token_target=60)

    def summarizer() -> Summarizer:
        return Summarizer(store, EventSaver(store, relay), BundledEmbedder(), SummariesReadModel(mongo_db, cipher), s)

    drive = feed(store, summarizer())
    await drive.append([recorded(i) for i in range(5)])
    long = " ".join(content(1_000 + k) for k in range(30))  # about 400 tokens of story
    assert created(await drive.append([recorded(5, tokens=600, text=long)])) == []
    drive.summarizer = summarizer()  # a fresh replica: it reads the segment's token counts from the log
    new = created(await drive.append([recorded(6, tokens=600, text=long)]))
    assert {(x.first_index, x.last_index) for x in new} == {(5, 6)}, "1,200 recorded tokens pass 1,000 at m6"
    [early] = new
    assert estimate_tokens(early.text) <= 60 + 10, "summarized into about token_target (author prefixes aside)"
    assert created(await drive.append([recorded(i, tokens=10) for i in range(7, 24)])) == []
    new = created(await drive.append([recorded(24, tokens=10)]))
    assert {(x.first_index, x.last_index) for x in new} == {(7, 24)}, "the count boundary closes the rest"


async def test_a_token_triggered_range_gets_a_longer_llm_summary(env, mongo_db):
    store, relay, cipher = env
    s = SummarizerSettings(token_trigger=1_000, token_target=200)
    with FakeOpenAIServer() as server:
        server.route("POST", CHAT_PATH, chat_handler(echo, model="echo-model"))
        model = OpenAIChatModel(server.base_url, "key", "echo-model", timeout_s=5, max_retries=0)
        drive = feed(
            store,
            Summarizer(
                store, EventSaver(store, relay), BundledEmbedder(), SummariesReadModel(mongo_db, cipher), s, model
            ),
        )
        counted = created(await drive.append([recorded(i) for i in range(5)]))
        early = created(await drive.append([recorded(5, tokens=1_200)]))
        await model.close()
        prompts = [c.json["messages"][0]["content"] for c in server.calls(CHAT_PATH)]
    assert {x.prompt_version for x in counted} == {"summarize.v1"}
    assert [(x.first_index, x.last_index, x.prompt_version) for x in early] == [(5, 5, "summarize_long.v1")]
    assert "About 150 words" in prompts[-1]


async def test_redelivery_appends_nothing(env, mongo_db):
    store, relay, cipher = env
    s = SummarizerSettings(max_active=2, consolidate_batch=2)
    summarizer = Summarizer(store, EventSaver(store, relay), BundledEmbedder(), SummariesReadModel(mongo_db, cipher), s)
    drive = feed(store, summarizer)
    await drive.append([recorded(i) for i in range(90)])
    before = await store.read_stream(SUMS)
    assert any(e.type == "summary.retired" for e in before), "consolidation ran"
    assert await summarizer.on_batch(items(await store.read_stream(CONV))) == []
    assert await store.read_stream(SUMS) == before


async def test_edits_and_deletes_retire_and_recompute(env, mongo_db):
    store, relay, cipher = env
    summaries = SummariesReadModel(mongo_db, cipher)
    summarizer = Summarizer(store, EventSaver(store, relay), BundledEmbedder(), summaries, SummarizerSettings())
    drive = feed(store, summarizer)
    await drive.append([recorded(i, text=TREASURE[i]) for i in range(5)])
    [first] = created(await store.read_stream(SUMS))
    assert "oak" in first.text

    edit = message_edited("t1", "u1", "c1", "m3", "Ana bought bread.", T0 + timedelta(hours=1), tokens=4)
    events = await drive.append([edit])
    [redo] = created(events)
    [retired] = [e.payload for e in events if e.type == "summary.retired"]
    assert (retired["summary_id"], retired["reason"], retired["replaced_by"]) == (
        first.summary_id,
        "stale",
        redo.summary_id,
    )
    assert redo.message_ids == first.message_ids
    assert "where the pirate treasure was hidden" in first.text
    assert "where the pirate treasure was hidden" not in redo.text, "the edited message's old text is gone"
    assert (redo.first_index, redo.last_index, redo.audience) == (0, 4, first.audience)

    delete = message_deleted("t1", "u1", "c1", "m1", T0 + timedelta(hours=2))
    events = await drive.append([delete])
    [after_delete] = created(events)
    assert "m1" not in after_delete.message_ids
    assert "oak" not in after_delete.text, "deleted text is gone"
    assert "chapel" not in after_delete.text

    # Redelivery of the edit and the delete changes nothing.
    before = await store.read_stream(SUMS)
    assert await summarizer.on_batch(items(await store.read_stream(CONV))) == []
    assert await store.read_stream(SUMS) == before

    [view] = await summaries.live_summaries("t1", "u1", "c1")
    assert view.summary_id == after_delete.summary_id
    stale = await summaries.by_ids("t1", [first.summary_id, redo.summary_id])
    assert [(v.status, v.replaced_by) for v in stale] == [
        ("stale", redo.summary_id),
        ("stale", after_delete.summary_id),
    ]


def echo(request: Any) -> dict[str, object]:
    """A model that "summarizes" by repeating its input: whatever a summary says came from its sources."""
    prompt = request.json["messages"][0]["content"]
    tag = "transcript" if "<transcript>" in prompt else "summaries"
    body = prompt.split(f"<{tag}>")[1].split(f"</{tag}>")[0]
    text = " ".join(re.sub(r"^\[\d+\] ", "", line) for line in body.strip().splitlines() if line.strip())
    return {"summary": text, "importance": 4, "emotional_context": "Hushed."}


async def test_a_deleted_message_leaves_consolidated_summaries_too(env, mongo_db):
    """With an LLM, consolidations use the ``consolidate.v1`` prompt; a deleted message's text leaves the folded
    summary that held it (recomputed over the remaining messages)."""
    store, relay, cipher = env
    s = SummarizerSettings(max_active=2, consolidate_batch=2)
    with FakeOpenAIServer() as server:
        server.route("POST", CHAT_PATH, chat_handler(echo, model="echo-model"))
        model = OpenAIChatModel(server.base_url, "key", "echo-model", timeout_s=5, max_retries=0)
        summaries = SummariesReadModel(mongo_db, cipher)
        drive = feed(store, Summarizer(store, EventSaver(store, relay), BundledEmbedder(), summaries, s, model))
        await drive.append([recorded(i, text=TREASURE[i] if i < 5 else None) for i in range(85)])
        holder = [x for x in fold_live(await store.read_stream(SUMS)).summaries() if "m1" in x.message_ids]
        [kind] = [x.summary_type for x in holder]
        assert kind != "short_term", "m1 is only in a folded summary now"
        assert "old oak" in holder[0].text
        assert holder[0].prompt_version == "consolidate.v1"
        assert holder[0].method == "llm:echo-model"
        delete = message_deleted("t1", "u1", "c1", "m1", T0 + timedelta(days=1))
        events = await drive.append([delete])
        await model.close()
    live = fold_live(await store.read_stream(SUMS)).summaries()
    assert not any("m1" in x.message_ids for x in live)
    assert not any("old oak" in x.text for x in live)
    [redo] = created(events)
    assert (redo.summary_type, redo.first_index, redo.consolidates) == (kind, 0, holder[0].consolidates)
    assert "pirate treasure" in redo.text, "the other messages are still remembered"
    [view] = await summaries.by_ids("t1", [holder[0].summary_id])
    assert (view.status, view.replaced_by) == ("stale", redo.summary_id)


async def test_invalid_payloads_are_rejected_not_crashing(env, mongo_db):
    store, relay, cipher = env
    summarizer = Summarizer(
        store, EventSaver(store, relay), BundledEmbedder(), SummariesReadModel(mongo_db, cipher), SummarizerSettings()
    )
    bad = [
        EventEnvelope(
            event_id=f"bad-{t}", type=t, schema_version=1, stream_id=SUMS, version=1, tenant_id="t1",
            occurred_at=T0, recorded_at=T0, payload={"summary_id": 7},
        )
        for t in ("summary.retired", "message.edited", "message.deleted", "summary.created")
    ]  # fmt: skip
    rejections = await summarizer.on_batch(items(bad))
    assert len(rejections) == 4
    assert all("invalid" in r.reason for r in rejections)
    assert await store.read_stream(SUMS) == []
