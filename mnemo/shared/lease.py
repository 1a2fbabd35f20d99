"""One active consumer at a time: a lease in a JetStream key-value bucket.

Why: a durable shared by several pulling replicas interleaves deliveries message by message, so whatever must be
consumed in order is consumed by one lease holder at a time. Ingest holds one lease per partition of the chat
stream and one for its v1 router (mnemo/services/ingest/partitions.py). NATS's own "pinned client" priority
groups would pin a durable to one client server-side, but nats-py cannot send the pull requests they need, and
pinning alone would not spread the partitions evenly: ingest decides who should hold what, the lease makes sure
no two replicas do. The bucket's ``max_age`` is the lease's time to live: the holder rewrites the key every third
of it; when the holder dies, the key expires and another replica's ``create`` succeeds. A holder that cannot
refresh for a whole TTL (someone else may hold it now) reports the lease lost and must stop consuming.

The fence: ``fresh()`` says whether the last write this holder saw succeed is younger than the TTL, on the
monotonic clock, counted from the moment that write was *sent* (the key expires a TTL after the server wrote it,
which is later). So a holder that asks ``fresh()`` before it begins work never begins any once the key may have
expired and another replica may hold it: a replica cut off from NATS (issue 25, ``make chaos``) kept consuming
its partition for ~3 s after another took it over. Stale once means lost for good: the dealing takes the
partition again through a new lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable

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

    def __init__(self, kv: KeyValue, name: str, ttl_s: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._kv = kv
        self._clock = clock
        self._refreshed = float("-inf")  # when the last write seen to succeed was sent (``fresh``)
        self._key = name.replace("-", "_")
        self._ttl_s = ttl_s
        # Unique per lease, not per process (a create whose reply was lost is recognised by it); the pid last.
        self._owner = f"{socket.gethostname()}:{secrets.token_hex(4)}:{os.getpid()}".encode()
        self._revision = 0
        self._keeper: asyncio.Task[None] | None = None
        self.lost = asyncio.Event()

    @property
    def key(self) -> str:
        return self._key

    async def acquire(self, poll_s: float | None = None) -> None:
        """Wait until this replica holds the lease (asking every ``poll_s``)."""
        poll = poll_s if poll_s is not None else self._ttl_s / 5
        announced = False
        while not await self.try_acquire(quiet=announced):
            if not announced:
                log.info("standby: another replica holds the %s lease", self._key)
                announced = True
            await asyncio.sleep(poll)

    async def try_acquire(self, *, quiet: bool = False) -> bool:
        """One attempt: True once this replica holds the lease (and keeps refreshing it until released)."""
        if self._keeper is not None and not self._keeper.done():
            return True
        asked = self._clock()
        try:
            self._revision = await self._kv.create(self._key, self._owner)
        except KeyWrongLastSequenceError:  # held (or the holder's key has not expired yet)
            asked = self._clock()
            if not await self._reclaim():  # our own create whose reply was lost (below)
                return False
        except Exception as exc:  # the bucket's stream has no leader yet, a node went away: try again
            if not quiet:
                log.warning("asking for the %s lease failed, retrying: %s", self._key, exc)
            return False
        log.info("holding the %s lease", self._key)
        self._refreshed = asked
        self.lost.clear()
        self._keeper = asyncio.create_task(self._keep())
        return True

    async def _reclaim(self) -> bool:
        """Whether the key names this replica (a create that timed out may still have been written); if so it is
        written again: when the lost create wrote it is unknown, and ``fresh`` counts from a write it saw."""
        try:
            entry = await self._kv.get(self._key)
            if entry.value != self._owner or entry.revision is None:
                return False
            self._revision = await self._kv.update(self._key, self._owner, last=entry.revision)
        except Exception:
            return False
        return True

    def fresh(self) -> bool:
        """Whether this replica may still begin work under the lease: held, and its last successful write sent less
        than a TTL ago. The first time it is not, the lease is lost (``lost`` set, no more refreshes)."""
        if self.lost.is_set():
            return False
        if (age := self._clock() - self._refreshed) < self._ttl_s:
            return True
        log.error("the %s lease was not refreshed for %.1f s (TTL %.0f s): lost", self._key, age, self._ttl_s)
        self.lost.set()
        return False

    async def stop_refreshing(self) -> None:
        """What a crash does to the lease: the key is left to expire after the TTL. Bounded: a cancellation
        swallowed inside a NATS call must not hold a stopping replica for ever (the refresh loop checks
        ``_keeper`` each turn and ends by itself)."""
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.cancel()
            await asyncio.wait({keeper}, timeout=self._ttl_s / 3)

    async def release(self) -> None:
        held = self._keeper is not None
        await self.stop_refreshing()
        if held and not self.lost.is_set():
            with contextlib.suppress(Exception):  # expiry frees it anyway
                await self._kv.delete(self._key, last=self._revision)

    async def _keep(self) -> None:
        me = asyncio.current_task()
        while self._keeper is me:
            await asyncio.sleep(self._ttl_s / 3)
            # Stopped meanwhile, or stale: a refresh that succeeded now could not undo work another replica began.
            if self._keeper is not me or not self.fresh():
                return
            asked = self._clock()
            try:
                self._revision = await self._kv.update(self._key, self._owner, last=self._revision)
                self._refreshed = asked
            except KeyWrongLastSequenceError:
                log.error("the %s lease was taken over by another replica", self._key)
                self.lost.set()
                return
            except Exception as exc:  # NATS unreachable for now: keep trying while the lease can still be ours
                log.warning("refreshing the %s lease failed, retrying: %s", self._key, exc)
