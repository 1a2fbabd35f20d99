"""Which ingest replicas are alive, and which of the partitions each should consume (pure assignment).

Each replica writes its member key (``ingest_members.<id>``) into the lease bucket every fifth of the lease TTL;
the bucket's ``max_age`` (the lease TTL) removes the key of a replica that stopped writing it. The members alive are the
keys the bucket holds, read with one ``STREAM.INFO`` (no consumer). Every replica computes the same assignment
from the same members; the leases make sure that, while views differ for a tick, no two consume one partition.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Hashable, Sequence
from typing import TypeVar

from nats.js import JetStreamContext
from nats.js.kv import KeyValue

from mnemo.shared import subjects
from mnemo.shared.lease import LEASE_BUCKET

Item = TypeVar("Item", bound=Hashable)


def assign(members: Sequence[str], items: Sequence[Item], me: str) -> list[Item]:
    """The items ``me`` should consume: item ``i`` goes to the ``i % len(members)``-th member in sorted order,
    so every member gets ``len(items) // len(members)`` or one more. ``me`` counts as a member even if the
    bucket does not list it yet (its first write may still be on its way)."""
    ordered = sorted({*members, me})
    mine = ordered.index(me)
    return [item for i, item in enumerate(items) if i % len(ordered) == mine]


def member_id() -> str:
    """This replica's id: host, process and a random part (a restarted process is a new member)."""
    host = "".join(c if c.isalnum() or c in "-_" else "-" for c in socket.gethostname())[:40]
    return f"{host}_{os.getpid()}_{secrets.token_hex(3)}"


class Membership:
    def __init__(self, js: JetStreamContext, kv: KeyValue, me: str | None = None) -> None:
        self._js = js
        self._kv = kv
        self.me = me or member_id()
        self._key = f"{subjects.INGEST_MEMBER_PREFIX}{self.me}"

    async def announce(self) -> None:
        """Write (refresh) this replica's member key."""
        await self._kv.put(self._key, self.me.encode())

    async def alive(self) -> list[str]:
        """The members whose key the bucket holds."""
        prefix = f"$KV.{LEASE_BUCKET}.{subjects.INGEST_MEMBER_PREFIX}"
        info = await self._js.stream_info(f"KV_{LEASE_BUCKET}", subjects_filter=f"{prefix}*")
        return sorted(subject.removeprefix(prefix) for subject in (info.state.subjects or {}))

    async def leave(self) -> None:
        """Remove this replica's key (a clean stop): the others take its partitions at their next tick. Purged
        from the bucket's stream, not deleted: a delete marker would keep the key listed until it expired."""
        await self._js.purge_stream(f"KV_{LEASE_BUCKET}", subject=f"$KV.{LEASE_BUCKET}.{self._key}")
