"""One active replica at a time: a lease in a JetStream key-value bucket, the others on standby.

Why: a durable shared by several pulling replicas interleaves deliveries message by message, and the v1 chat
subjects carry no conversation id to partition on, so only a single active consumer keeps each conversation in
publish order (NATS's own "pinned client" priority groups do this server-side, but nats-py cannot send the
pull requests they need). The bucket's ``max_age`` is the lease's time to live: the holder rewrites the key every
third of it; when the holder dies, the key expires and a standby's ``create`` succeeds. A holder that cannot
refresh for a whole TTL (someone else may hold it now) reports the lease lost and must stop consuming.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time

from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig
from nats.js.errors import BucketNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

log = logging.getLogger(__name__)

LEASE_BUCKET = "mnemo_leases"


async def lease_bucket(js: JetStreamContext, ttl_s: float, replicas: int = 1) -> KeyValue:
    try:
        return await js.key_value(LEASE_BUCKET)
    except BucketNotFoundError:
        return await js.create_key_value(KeyValueConfig(bucket=LEASE_BUCKET, history=1, ttl=ttl_s, replicas=replicas))


class Lease:
    """``await acquire()`` waits until this replica holds ``name``; ``lost`` is set if it stops holding it."""

    def __init__(self, kv: KeyValue, name: str, ttl_s: float) -> None:
        self._kv = kv
        self._key = name.replace("-", "_")
        self._ttl_s = ttl_s
        # Unique per lease, not per process (a create whose reply was lost is recognised by it); the pid last.
        self._owner = f"{socket.gethostname()}:{secrets.token_hex(4)}:{os.getpid()}".encode()
        self._revision = 0
        self._keeper: asyncio.Task[None] | None = None
        self.lost = asyncio.Event()

    async def acquire(self, poll_s: float | None = None) -> None:
        poll = poll_s if poll_s is not None else self._ttl_s / 5
        announced = False
        while True:
            try:
                self._revision = await self._kv.create(self._key, self._owner)
                break
            except KeyWrongLastSequenceError:  # held (or the holder's key has not expired yet)
                if await self._ours():  # our own create whose reply was lost (below)
                    break
                if not announced:
                    log.info("standby: another replica holds the %s lease", self._key)
                    announced = True
            except Exception as exc:  # the bucket's stream has no leader yet, a node went away: try again
                log.warning("asking for the %s lease failed, retrying: %s", self._key, exc)
            await asyncio.sleep(poll)
        log.info("holding the %s lease", self._key)
        self._keeper = asyncio.create_task(self._keep())

    async def _ours(self) -> bool:
        """Whether the key names this replica (a create that timed out may still have been written)."""
        try:
            entry = await self._kv.get(self._key)
        except Exception:
            return False
        if entry.value != self._owner or entry.revision is None:
            return False
        self._revision = entry.revision
        return True

    async def stop_refreshing(self) -> None:
        """What a crash does to the lease: the key is left to expire after the TTL."""
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeper

    async def release(self) -> None:
        await self.stop_refreshing()
        if not self.lost.is_set():
            with contextlib.suppress(Exception):  # expiry frees it anyway
                await self._kv.delete(self._key, last=self._revision)

    async def _keep(self) -> None:
        refreshed = time.monotonic()
        while True:
            await asyncio.sleep(self._ttl_s / 3)
            try:
                self._revision = await self._kv.update(self._key, self._owner, last=self._revision)
                refreshed = time.monotonic()
            except KeyWrongLastSequenceError:
                log.error("the %s lease was taken over by another replica", self._key)
                self.lost.set()
                return
            except Exception as exc:  # NATS unreachable for now: keep trying while the lease can still be ours
                if time.monotonic() - refreshed >= self._ttl_s:
                    log.error("could not refresh the %s lease for %.0f s: %s", self._key, self._ttl_s, exc)
                    self.lost.set()
                    return
                log.warning("refreshing the %s lease failed, retrying: %s", self._key, exc)
