"""The chat stream's partitions on a real nats-server: NATS maps keyed subjects where ``partition_of`` says, a
keyed event naming another conversation than its payload is dead-lettered, and a new partition count takes over
on a running deployment once the older partitions are drained, every conversation staying in publish order
(mnemo/shared/partitions.py, mnemo/services/ingest/partitions.py)."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import nats
import pytest
from faststream.nats import NatsRouter
from nats.js.errors import KeyNotFoundError

from mnemo.runtime.cli import main as cli_main
from mnemo.services.ingest.app import create_router
from mnemo.services.ingest.partitions import PartitionManager
from mnemo.shared import subjects
from mnemo.shared.broker import ensure_streams
from mnemo.shared.delivery import DLQ_REASON, DLQ_SUBJECT
from mnemo.shared.delivery.pull import PullLoop
from mnemo.shared.deps import Deps
from mnemo.shared.events.recorded import conversation_stream
from mnemo.shared.lease import LEASE_BUCKET
from mnemo.shared.partitions import current_count, generations, ingest_drained, partition_of, set_count
from mnemo.shared.probes import Probes
from mnemo_client.wire.keyed import subject_token
from tests.integration.ingest_stack import Stack, dead_letters, message_created, reset_streams, running
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 1, 12, tzinfo=UTC)


@pytest.fixture
async def stack(nats_url: str, mongo_url: str, db_name: str) -> AsyncIterator[Stack]:
    async with running(nats_url, mongo_url, db_name, create_router) as s:
        yield s
    nc = await nats.connect(nats_url)
    try:
        await reset_streams(nc.jetstream())  # the partition count this test set must not outlive it
    finally:
        await nc.drain()


async def test_nats_maps_keyed_subjects_where_partition_of_says(stack: Stack) -> None:
    count = await current_count(stack.js)
    assert count == 16
    rng = random.Random(5)
    alphabet = "abcxyz019-_. é/*>%~"
    for _ in range(60):
        tenant = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        conv = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        subject = subjects.keyed(subjects.MESSAGE_CREATED, subject_token(tenant), subject_token(conv))
        ack = await stack.js.publish(subject, b"{}")
        stored = (await stack.js.get_msg(subjects.CHAT_STREAM, ack.seq)).subject or ""
        expected = partition_of(subject_token(tenant), subject_token(conv), count)
        assert stored.startswith(f"{subjects.INGEST_PARTITIONS_PREFIX}.16.{expected}."), (tenant, conv, stored)
        assert subjects.public_subject(stored) == subject


async def test_a_keyed_event_naming_another_conversation_is_dead_lettered(stack: Stack) -> None:
    body = message_created("m1", "hello", T0, conversation_id="c1")
    wrong = subjects.keyed(subjects.MESSAGE_CREATED, "t1", "c2")  # the payload says c1: its partition may differ
    await stack.js.publish(wrong, json.dumps(body).encode())
    await wait_until(lambda: ingest_drained(stack.js), "ingest acked it")
    [letter] = await dead_letters(stack.js, "ingest")
    headers = letter.headers or {}
    assert "publish it on 'mnemo.chat.message.created.v2.t1.c1'" in headers[DLQ_REASON]
    assert headers[DLQ_SUBJECT] == wrong  # the subject it was published on, not the partition's
    assert await stack.store.read_stream(conversation_stream("t1", "u1", "c1")) == []


async def test_a_new_partition_count_takes_over_once_the_old_partitions_are_drained(stack: Stack) -> None:
    conversations = [f"c{i:02d}" for i in range(12)]
    sent: dict[str, list[str]] = {c: [] for c in conversations}

    async def publish(start: int, stop: int) -> None:
        for k in range(start, stop):
            for conv in conversations:
                message_id = f"{conv}-m{k:03d}"
                body = message_created(message_id, f"turn {k}", T0 + timedelta(seconds=k), conversation_id=conv)
                subject = (
                    # a third of the conversations through the v1 router: order holds within v1 and within v2,
                    # not across them (docs/scaling.md), so one conversation never alternates
                    subjects.MESSAGE_CREATED
                    if int(conv[1:]) % 3 == 0
                    else subjects.keyed(subjects.MESSAGE_CREATED, "t1", subject_token(conv))
                )
                await stack.js.publish(subject, json.dumps(body).encode())
                sent[conv].append(message_id)

    await publish(0, 20)
    assert await set_count(stack.js, 5) == 16  # while the 16 partitions still hold messages
    await publish(20, 40)
    await wait_until(lambda: ingest_drained(stack.js), "ingest recorded everything", 180)

    [generation] = await generations(stack.js)
    assert (generation.count, generation.current) == (5, True)  # the 16 partitions' durables are deleted
    assert sorted(p.durable for p in generation.durables) == sorted(subjects.partition_durable(5, k) for k in range(5))
    for conv in conversations:
        log = await stack.store.read_stream(conversation_stream("t1", "u1", conv))
        assert [(e.payload["message_id"], e.payload["index"]) for e in log] == [
            (m, i) for i, m in enumerate(sent[conv])
        ], conv


def conversation_in(partition: int, prefix: str, count: int = 16) -> str:
    """A conversation of tenant t1 that NATS maps into ``partition``."""
    token = subject_token("t1")
    return next(c for k in range(10_000) if partition_of(token, subject_token(c := f"{prefix}{k}"), count) == partition)


async def test_two_forks_whose_parents_sit_behind_each_other_do_not_wait_on_each_other(
    nats_url: str, mongo_url: str, db_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Partition 1 holds [parent of B, fork A], partition 2 [parent of A, fork B], each fetched as one batch: fork A
    waits for partition 2's parent of A, which sat behind fork B, which waited for partition 1's parent of B, behind
    fork A. Both forks waited out their bound (and then raced their parents: CI dead-lettered one as "not
    recorded", 2026-11-28). A fork now leads a batch of its own, so each parent is recorded without waiting."""
    parent_a, fork_a = conversation_in(2, "parent-a-"), conversation_in(1, "fork-a-")
    parent_b, fork_b = conversation_in(1, "parent-b-"), conversation_in(2, "fork-b-")
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    await reset_streams(js)
    for conv in (parent_a, parent_b):  # published before ingest starts: each partition fetches its two at once
        body = message_created(f"{conv}-m0", "the road north", T0, conversation_id=conv)
        await js.publish(subjects.keyed(subjects.MESSAGE_CREATED, "t1", subject_token(conv)), json.dumps(body).encode())
    for parent, fork in ((parent_a, fork_a), (parent_b, fork_b)):
        body = {"tenant_id": "t1", "user_id": "u1", "conversation_id": fork, "parent_conversation_id": parent,
                "from_message_id": f"{parent}-m0", "forked_at": (T0 + timedelta(minutes=1)).isoformat()}  # fmt: skip
        await js.publish(subjects.keyed(subjects.CONVERSATION_FORKED, "t1", subject_token(fork)), json.dumps(body).encode())  # fmt: skip
    await nc.drain()
    async with running(nats_url, mongo_url, db_name, create_router, streams=ensure_streams) as stack:
        await wait_until(lambda: ingest_drained(stack.js), "ingest recorded both forks", 180)
        for fork in (fork_a, fork_b):
            log = await stack.store.read_stream(conversation_stream("t1", "u1", fork))
            assert [e.type for e in log] == ["conversation.forked", "message.recorded"], fork
        assert await dead_letters(stack.js, "ingest") == []
    assert not [r.message for r in caplog.records if "going on after" in r.getMessage()]  # nothing waited it out


async def test_setting_the_same_count_changes_nothing(stack: Stack) -> None:
    assert await set_count(stack.js, 16) == 16
    await asyncio.sleep(0)
    assert await current_count(stack.js) == 16


async def test_the_cli_shows_the_partitions_and_sets_their_count(
    stack: Stack, nats_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``mnemo ingest-partitions``: once as an operator runs it (its own process: the bound is generous, since a
    loaded machine once took over two minutes just to import it), then through the CLI's ``main`` in this
    process."""
    await wait_until(lambda: ingest_drained(stack.js), "ingest dealt its partitions", 180)
    argv = [sys.executable, "-m", "mnemo.runtime.cli", "ingest-partitions", "--nats-url", nats_url]
    shown = await asyncio.to_thread(subprocess.run, argv, capture_output=True, text=True, timeout=400, check=False)
    assert shown.returncode == 0, shown.stderr
    assert "16 partitions (current)" in shown.stdout
    assert subjects.partition_durable(16, 15) in shown.stdout

    def cli(*args: str) -> tuple[int, str, str]:
        code = cli_main(["ingest-partitions", "--nats-url", nats_url, *args])
        out, err = capsys.readouterr()
        return code, out, err

    code, out, err = await asyncio.to_thread(cli, "--set", "4")
    assert code == 0, err
    assert "into 4 partitions from now on (was 16)" in out
    assert await current_count(stack.js) == 4
    code, _, err = await asyncio.to_thread(cli, "--set", "0")
    assert code == 2
    assert "at least 1" in err


def takes_forever(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Every pull loop's start waits until it is cancelled (a durable that is never made): the event is set once
    ingest begins taking something."""
    taking = asyncio.Event()

    async def never_starts(self: PullLoop, *, resume: bool = False) -> int:
        taking.set()
        await asyncio.Event().wait()  # the stop's cancellation ends it
        return 0

    monkeypatch.setattr(PullLoop, "start", never_starts)
    return taking


async def test_a_stop_in_the_middle_of_a_take_releases_the_lease(
    nats_url: str, mongo_url: str, db_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replica stopped while it was taking a partition (its durable being made) lets the partition go at once:
    it used to leave the lease refreshed by a task nobody stopped, so no replica could take the partition (the
    next stack of this file waited a lease TTL and more for it)."""
    taking = takes_forever(monkeypatch)
    async with running(nats_url, mongo_url, db_name, create_router) as s:
        await wait_until(taking.is_set, "ingest began taking the v1 router")
        kv = await s.js.key_value(LEASE_BUCKET)
        assert (await kv.get(subjects.INGEST_V1_LEASE)).value  # held while it is being taken
    lingering = [t for t in asyncio.all_tasks() if "Lease._keep" in repr(t.get_coro())]
    assert lingering == []
    nc = await nats.connect(nats_url)
    try:
        kv = await nc.jetstream().key_value(LEASE_BUCKET)
        with pytest.raises(KeyNotFoundError):  # released (a delete marker), not left to expire
            await kv.get(subjects.INGEST_V1_LEASE)
    finally:
        await nc.drain()


async def test_a_stuck_tick_keeps_the_member_key_and_turns_the_replica_unready(
    nats_url: str, mongo_url: str, db_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The member key is refreshed on its own, not by the tick: a tick that took longer than the lease TTL let
    the key expire, the other replicas dealt this one's partitions among themselves and handed them back a tick
    later. A tick that does not end at all is reported by the readiness probe (an operator's restart frees it)."""
    taking = takes_forever(monkeypatch)
    monkeypatch.setattr(PartitionManager, "_stuck_after_s", 1.0)
    probes = Probes()
    probes.phase = "serving"

    def with_probes(deps: Deps) -> NatsRouter:
        deps.probes = probes  # as the service's host gives them
        return create_router(deps)

    async with running(nats_url, mongo_url, db_name, with_probes) as s:
        await wait_until(taking.is_set, "ingest began taking the v1 router")
        ttl = s.deps.settings.delivery.lease_ttl_s
        await asyncio.sleep(ttl * 1.3)  # the key's max age passes while the tick is stuck
        kv = await s.js.key_value(LEASE_BUCKET)
        members = await kv.keys()
        assert any(k.startswith(subjects.INGEST_MEMBER_PREFIX) for k in members), members
        ready, checks = await probes.readiness()
        assert not ready
        assert "partition tick has run for" in checks["partitions"]
