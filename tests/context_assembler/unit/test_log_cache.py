"""The reads a replica keeps (gather/cache.py) until the log relays a change of what they were read from
(gather/invalidations.py), and the per-request memo (gather/memo.py): a kept read is what a fresh read would
give, except for at most ``ttl_s`` after a lost invalidation."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

from mnemo.services.context_assembler.gather.cache import LogCache, tenant_topic
from mnemo.services.context_assembler.gather.invalidations import (
    SUBJECTS,
    facts_topic,
    forks_topic,
    lore_topic,
    on_relayed,
    sources_of,
    summaries_topic,
)
from mnemo.services.context_assembler.gather.memo import MemoEmbedder, once, request_scope
from mnemo.shared.events.recorded import (
    BOT_RECORDED,
    CONVERSATION_FORKED,
    ERASURE_COMPLETED,
    FACT_RETIRED,
    LOREBOOK_ENTRY_UPDATED,
    MESSAGE_RECORDED,
    SUMMARY_CREATED,
    SUMMARY_RETIRED,
    bot_stream,
    conversation_stream,
    summary_stream,
)
from mnemo.shared.subjects import log_subject


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Source:
    """A read model value and how many times it was read."""

    def __init__(self, value: str) -> None:
        self.value = value
        self.reads = 0

    async def read(self) -> str:
        self.reads += 1
        return self.value


async def test_a_kept_read_is_served_until_its_source_changes() -> None:
    clock, bot = Clock(), Source("Ada")
    cache = LogCache(ttl_s=60, settle_s=2, clock=clock)
    sources = (bot_stream("t1", "b1"), tenant_topic("t1"))
    assert await cache.read(("bot", "t1", "b1"), sources, bot.read) == "Ada"
    clock.now += 1
    assert await cache.read(("bot", "t1", "b1"), sources, bot.read) == "Ada"
    assert bot.reads == 1
    bot.value = "Ada II"
    cache.changed(bot_stream("t1", "b1"))
    assert await cache.read(("bot", "t1", "b1"), sources, bot.read) == "Ada II"
    assert bot.reads == 2


async def test_many_keys_are_read_at_once_and_only_the_missing_ones_again() -> None:
    clock = Clock()
    cache = LogCache(ttl_s=60, settle_s=2, clock=clock)
    store = {"s1": "one", "s2": "two"}
    asked: list[list[object]] = []

    async def read(keys: list[object]) -> dict[object, str]:
        asked.append(keys)
        return {k: store[k] for k in keys if isinstance(k, str) and k in store}

    sources = (summaries_topic("t1", "u1"), tenant_topic("t1"))
    assert await cache.read_each(["s2", "s1", "s3"], sources, read) == {"s2": "two", "s1": "one", "s3": None}
    clock.now += 3
    store["s1"] = "one, again"
    assert await cache.read_each(["s1", "s4"], sources, read) == {"s1": "one", "s4": None}
    assert asked == [["s2", "s1", "s3"], ["s4"]], "what is kept (absence too) is not read again"
    clock.now += 3
    cache.changed(summaries_topic("t1", "u1"))
    clock.now += 3
    assert await cache.read_each(["s1"], sources, read) == {"s1": "one, again"}
    cache.changed(summaries_topic("t1", "u2"))  # another user's summaries: nothing of u1 dropped
    clock.now += 3
    assert await cache.read_each(["s1"], sources, read) == {"s1": "one, again"}
    assert len(asked) == 3


async def test_a_read_right_after_a_change_is_used_but_not_kept() -> None:
    """The relayed event may arrive before another writer's projection is visible: what is read within
    ``settle_s`` of a change is read again next time."""
    clock, bot = Clock(), Source("old")
    cache = LogCache(ttl_s=60, settle_s=2, clock=clock)
    cache.changed("s")
    await cache.read("k", ["s"], bot.read)
    clock.now += 1
    bot.value = "new"
    assert await cache.read("k", ["s"], bot.read) == "new"
    clock.now += 3
    await cache.read("k", ["s"], bot.read)
    assert await cache.read("k", ["s"], bot.read) == "new"
    assert bot.reads == 3, "kept once the source had settled"


async def test_nothing_is_kept_past_its_ttl_and_the_oldest_go_first() -> None:
    clock, value = Clock(), Source("v")
    cache = LogCache(ttl_s=10, settle_s=0, size=2, clock=clock)
    await cache.read("a", ["s"], value.read)
    clock.now += 11
    await cache.read("a", ["s"], value.read)
    assert value.reads == 2, "a lost invalidation leaves a read stale for at most ttl_s"
    await cache.read("b", ["s"], value.read)
    await cache.read("c", ["s"], value.read)
    assert len(cache) == 2
    await cache.read("a", ["s"], value.read)
    assert value.reads == 5, "the least recently used one was dropped"


async def test_keys_carry_the_tenant_and_an_erasure_drops_all_a_tenant_kept() -> None:
    cache, one, two = LogCache(settle_s=0), Source("one"), Source("two")
    await cache.read(("bot", "t1", "b"), [bot_stream("t1", "b"), tenant_topic("t1")], one.read)
    await cache.read(("bot", "t2", "b"), [bot_stream("t2", "b"), tenant_topic("t2")], two.read)
    assert await cache.read(("bot", "t2", "b"), [], two.read) == "two"
    on_relayed(cache, envelope(ERASURE_COMPLETED.name, "t1", "privacy/t1"))
    assert len(cache) == 1
    assert await cache.read(("bot", "t2", "b"), [], two.read) == "two"
    assert (one.reads, two.reads) == (1, 1)


def envelope(event_type: str, tenant_id: str, stream_id: str) -> bytes:
    """A relayed event as the relay publishes it: the stored envelope's JSON (payload still encrypted)."""
    return json.dumps(
        {"event_id": "e1", "type": event_type, "tenant_id": tenant_id, "stream_id": stream_id, "version": 3,
         "payload": {"enc": "..."}}
    ).encode()  # fmt: skip


def test_each_relayed_kind_names_what_it_changes() -> None:
    assert sources_of(BOT_RECORDED.name, "t1", bot_stream("t1", "b1")) == [bot_stream("t1", "b1")]
    assert sources_of(LOREBOOK_ENTRY_UPDATED.name, "t1", "lorebook/t1/bk") == [lore_topic("t1")]
    assert sources_of(FACT_RETIRED.name, "t1", "knowledge/t1/b1") == [facts_topic("t1")]
    forked = sources_of(CONVERSATION_FORKED.name, "t1", conversation_stream("t1", "u1", "c2"))
    assert forked == [forks_topic("t1", "u1")]
    assert sources_of(MESSAGE_RECORDED.name, "t1", conversation_stream("t1", "u1", "c1")) == []
    for kind in (SUMMARY_CREATED, SUMMARY_RETIRED):
        assert sources_of(kind.name, "t1", summary_stream("t1", "u1", "c1")) == [summaries_topic("t1", "u1")]
        assert log_subject(kind.name) in SUBJECTS
    assert log_subject(MESSAGE_RECORDED.name) not in SUBJECTS, "messages are checked by version, not heard"
    assert log_subject(BOT_RECORDED.name) in SUBJECTS


def test_a_body_that_is_no_envelope_changes_nothing_and_does_not_raise() -> None:
    cache = LogCache()
    for body in (b"not json", b"[]", b'{"type": "bot.recorded"}', b"\xff\xfe"):
        on_relayed(cache, body)


async def test_the_memo_runs_each_part_once_per_request_and_never_across_requests() -> None:
    runs: list[str] = []

    async def state() -> str:
        runs.append("state")
        await asyncio.sleep(0)
        return "s"

    with request_scope():
        assert await asyncio.gather(once("k", state), once("k", state)) == ["s", "s"]
    with request_scope():
        await once("k", state)
    await once("k", state)  # outside a request: not remembered
    assert runs == ["state"] * 3


class Counting:
    dimensions = 2
    model_id = "counting"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [[float(len(t)), 1.0] for t in texts]

    async def close(self) -> None:
        return None


async def test_the_query_and_the_lore_text_are_embedded_in_one_batch_once() -> None:
    inner = Counting()
    memo = MemoEmbedder(inner)
    with request_scope():
        memo.start(["the query", "the lore text"])
        assert await memo.embed(["the lore text"]) == [[13.0, 1.0]]
        assert await memo.embed(["the query"]) == [[9.0, 1.0]]
        assert await memo.embed(["the query", "new"]) == [[9.0, 1.0], [3.0, 1.0]]
    assert inner.calls == [["the query", "the lore text"], ["new"]]
