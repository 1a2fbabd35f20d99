"""Erasure's deletion from a real JetStream stream: the index reads the stream once and then only what is
new, deletes each erasure's messages by sequence, spares everyone else's and leaves no consumer behind."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator

import pytest
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from mnemo.services.privacy.stream_purge import stream_passes

pytestmark = pytest.mark.integration


@pytest.fixture
async def stream(nc: NatsClient) -> AsyncIterator[tuple[str, str]]:
    js = nc.jetstream()
    name, prefix = f"PURGE_{uuid.uuid4().hex[:8]}", f"purge.{uuid.uuid4().hex[:8]}"
    await js.add_stream(name=name, subjects=[f"{prefix}.>"])
    yield name, prefix
    with contextlib.suppress(NotFoundError):
        await js.delete_stream(name)


async def publish(js: JetStreamContext, prefix: str, tenant: str, user: str | None, n: int = 1) -> None:
    for _ in range(n):
        doc = {"tenant_id": tenant, "bot_id": "b"} if user is None else {"tenant_id": tenant, "user_id": user}
        await js.publish(f"{prefix}.msg", json.dumps(doc).encode())


async def owners_left(js: JetStreamContext, name: str) -> list[tuple[str, str | None]]:
    state = (await js.stream_info(name)).state
    left = []
    for seq in range(state.first_seq, state.last_seq + 1):
        with contextlib.suppress(NotFoundError):  # deleted
            body = (await js.get_msg(name, seq)).data or b""
            doc = json.loads(body) if body.startswith(b"{") else {"tenant_id": "?"}
            left.append((doc["tenant_id"], doc.get("user_id")))
    return sorted(left, key=str)


async def test_erasures_delete_their_messages_by_sequence_and_spare_the_rest(
    nc: NatsClient, stream: tuple[str, str]
) -> None:
    js, (name, prefix) = nc.jetstream(), stream
    for tenant, user in [("t1", "alice"), ("t1", "bob"), ("t1", "carol"), ("t2", "alice")] * 5:
        await publish(js, prefix, tenant, user)
    await publish(js, prefix, "t1", None)  # a bot: only the tenant's erasure takes it
    await js.publish(f"{prefix}.msg", b"\xff not json")
    passes = stream_passes(js, [(name, f"{prefix}.>")])

    assert await passes.purge(("t1", "alice")) == 5
    assert await passes.purge(("t1", "carol")) == 5
    assert await js.consumers_info(name) == [], "each reading deletes its ephemeral consumer"
    await publish(js, prefix, "t1", "carol", 2)  # carol writes again after her erasure: new data
    await js.delete_msg(name, 2)  # one of bob's, gone meanwhile (retention, another replica)
    assert await passes.purge(("t1", "bob")) == 4
    assert await passes.purge(("t1", "carol")) == 2, "the next reading starts where the last one ended"

    assert await owners_left(js, name) == sorted([("?", None), ("t1", None), *[("t2", "alice")] * 5], key=str)
    assert await passes.purge(("t1", None)) == 1, "the tenant's erasure takes its bot's message"
    assert await passes.purge(("t2", None)) == 5
    assert await owners_left(js, name) == [("?", None)]


async def test_erasures_at_the_same_time_share_readings(nc: NatsClient, stream: tuple[str, str]) -> None:
    js, (name, prefix) = nc.jetstream(), stream
    users = [f"u{i}" for i in range(12)]
    for user in users:
        await publish(js, prefix, "t", user, 3)
    passes = stream_passes(js, [(name, f"{prefix}.>")])

    removed = await asyncio.gather(*(passes.purge(("t", user)) for user in users))

    assert removed == [3] * len(users)
    assert passes.passes <= 2, "twelve erasures asked at once: one reading, or two if one started alone"
    assert (await js.stream_info(name)).state.messages == 0


async def test_a_stream_made_again_is_read_from_its_start(nc: NatsClient, stream: tuple[str, str]) -> None:
    js, (name, prefix) = nc.jetstream(), stream
    await publish(js, prefix, "t", "alice", 4)
    passes = stream_passes(js, [(name, f"{prefix}.>")])
    assert await passes.purge(("t", "nobody")) == 0
    await js.delete_stream(name)
    assert await passes.purge(("t", "alice")) == 0, "no stream: nothing to delete"
    await js.add_stream(name=name, subjects=[f"{prefix}.>"])
    await publish(js, prefix, "t", "alice", 2)
    assert await passes.purge(("t", "alice")) == 2
    await js.delete_stream(name)  # made again while nobody looked, already longer than the old one was
    await js.add_stream(name=name, subjects=[f"{prefix}.>"])
    await publish(js, prefix, "t", "bob", 5)
    assert await passes.purge(("t", "bob")) == 5
