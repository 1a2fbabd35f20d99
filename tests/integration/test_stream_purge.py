"""Erasure's pass over a real JetStream stream: one pass deletes the messages of several erasures, counts each
one's, spares everyone else's and leaves no consumer behind."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid

import pytest
from nats.aio.client import Client as NatsClient
from nats.js.errors import NotFoundError

from services.privacy.stream_purge import belongs_to, purge, stream_passes

pytestmark = pytest.mark.integration


async def test_one_pass_purges_several_users_and_leaves_no_consumer(nc: NatsClient) -> None:
    js = nc.jetstream()
    stream, prefix = f"PURGE_{uuid.uuid4().hex[:8]}", f"purge.{uuid.uuid4().hex[:8]}"
    await js.add_stream(name=stream, subjects=[f"{prefix}.>"])
    try:
        people = [("t1", "alice"), ("t1", "bob"), ("t1", "carol"), ("t2", "alice")]
        for n in range(30):
            tenant, user = people[n % len(people)]
            await js.publish(f"{prefix}.msg", json.dumps({"tenant_id": tenant, "user_id": user, "n": n}).encode())
        await js.publish(f"{prefix}.msg", b"\xff not json")

        counts = await purge(js, stream, f"{prefix}.>", [belongs_to("t1", "alice"), belongs_to("t1", "carol")])

        assert counts == [8, 7]
        info = await js.stream_info(stream)
        assert info.state.messages == 31 - 15
        assert await js.consumers_info(stream) == [], "the pass's ephemeral consumer is deleted"
        left = []
        for seq in range(1, 32):
            with contextlib.suppress(NotFoundError):  # deleted
                left.append((await js.get_msg(stream, seq)).data or b"")
        kept = [json.loads(body) for body in left if body.startswith(b"{")]
        assert len(kept) == 15, "and the body that is not JSON stays too"
        assert {(d["tenant_id"], d["user_id"]) for d in kept} == {("t1", "bob"), ("t2", "alice")}
    finally:
        await js.delete_stream(stream)


async def test_erasures_at_the_same_time_share_passes_on_a_real_stream(nc: NatsClient) -> None:
    js = nc.jetstream()
    stream, prefix = f"PURGE_{uuid.uuid4().hex[:8]}", f"purge.{uuid.uuid4().hex[:8]}"
    await js.add_stream(name=stream, subjects=[f"{prefix}.>"])
    try:
        users = [f"u{i}" for i in range(12)]
        for user in users:
            for _ in range(3):
                await js.publish(f"{prefix}.msg", json.dumps({"tenant_id": "t", "user_id": user}).encode())
        passes = stream_passes(js, [(stream, f"{prefix}.>")])

        removed = await asyncio.gather(*(passes.purge(belongs_to("t", user)) for user in users))

        assert removed == [3] * len(users)
        assert passes.passes <= 2, "twelve erasures asked at once: one pass, or two if one started alone"
        assert (await js.stream_info(stream)).state.messages == 0
    finally:
        await js.delete_stream(stream)
