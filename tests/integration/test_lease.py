"""The single-active lease (mnemo/shared/lease.py) on a real nats-server: one holder, a standby that takes over once
the holder stops refreshing, and a holder that finds its own key after a create whose reply it never saw."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import nats
import pytest
from nats.js.kv import KeyValue

from mnemo.shared.lease import Lease, lease_bucket

pytestmark = pytest.mark.integration
TTL = 2.0


async def bucket_ttl(kv: KeyValue) -> float:
    """The lease bucket's own time to live: the session's first test to make the bucket set it (an ingest
    test's bucket keeps keys for the default 10 s), and a key lives that long whatever ``Lease`` is told."""
    return (await kv.status()).ttl or TTL


@asynccontextmanager
async def lease_key(nats_url: str) -> AsyncIterator[tuple[KeyValue, str, float]]:
    """The lease bucket (on a connection of its own), a key no other test uses, and the bucket's time to live."""
    nc = await nats.connect(nats_url)
    try:
        kv = await lease_bucket(nc.jetstream(), TTL)
        yield kv, f"svc-{uuid.uuid4().hex[:8]}", await bucket_ttl(kv)
    finally:
        await nc.close()


async def test_a_standby_takes_over_when_the_holder_stops_refreshing(nats_url: str) -> None:
    async with lease_key(nats_url) as (kv, name, ttl):
        first, second = Lease(kv, name, ttl), Lease(kv, name, ttl)
        await first.acquire(poll_s=0.1)
        standby = asyncio.create_task(second.acquire(poll_s=0.1))
        await asyncio.sleep(ttl * 1.2)  # refreshed by the holder meanwhile
        assert not standby.done(), "the standby waits while the holder refreshes"
        await first.stop_refreshing()  # what a crash does
        await asyncio.wait_for(standby, ttl * 5)
        assert not second.lost.is_set()
        await second.release()


async def test_a_create_whose_reply_was_lost_is_recognised_as_ours(nats_url: str) -> None:
    async with lease_key(nats_url) as (kv, name, ttl):
        lease = Lease(kv, name, ttl)
        await kv.create(name, lease._owner)  # written, but the replica never saw the reply
        await asyncio.wait_for(lease.acquire(poll_s=0.1), ttl / 2)  # not after the key expired: at once
        await lease.release()
