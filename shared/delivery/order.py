"""Stream-order gate: replicas sharing one durable still start batches in stream order.

JetStream spreads a shared durable's batches across replicas, so replica B can append messages 1,025-2,048
while replica A still holds 1-1,024: a conversation with messages in both would be recorded out of order. The
gate lets a batch begin only when every earlier stream message is either acknowledged (the consumer's ack floor,
which NATS keeps for the durable across replicas) or was already begun, in order, by this replica. One replica
with consecutive batches never asks the server (the fast path); a batch that skips sequences another replica
holds waits until that replica acks them. After a crash, the dead replica's messages come back after
``ack_wait``; the survivor's waiting batch then gives way (``wait_s`` runs out, the batch is naked and fetched
again behind the redelivered ones), because a replica blocked in the gate is not pulling.

Why not partitions: the v1 chat subjects carry no conversation id, so a subject transform cannot route a
conversation to one partition; a router hop would write every message twice. Ingest's limit is the store (see
``make bench-scale``), so its replicas are for availability, and the gate costs one consumer-info call only
when batches interleave across replicas.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection

AckFloor = Callable[[], Awaitable[int]]
"""The durable's ack floor as a stream sequence: every message at or below it is acknowledged."""


class OrderGate:
    def __init__(self, ack_floor: AckFloor, *, wait_s: float, poll_s: float = 0.02) -> None:
        self._ack_floor = ack_floor
        self._wait_s = wait_s
        self._poll_s = poll_s
        self._upto = 0  # every sequence <= this is acked or was begun here, in order
        self._begun: set[int] = set()  # begun here and maybe not acked yet (pruned below the ack floor)
        self._handed_back: set[int] = set()  # given back once after waiting for their turn

    async def admit(self, seqs: Collection[int]) -> bool:
        """Wait until the batch ``seqs`` may begin; False when ``wait_s`` ran out (the caller hands it back)."""
        if not seqs:
            return True
        low, high = min(seqs), max(seqs)
        if low == self._upto + 1 and high - low + 1 == len(seqs):  # the next consecutive run: nothing between
            self._begin(seqs, high)
            return True
        deadline = time.monotonic() + self._wait_s
        delay = self._poll_s
        while True:
            floor = await self._ack_floor()
            self._begun = {s for s in self._begun if s > floor}
            between = set(range(floor + 1, high)) - set(seqs)
            # Every earlier sequence is acked, or was begun here (acked or not: the floor may be held below them
            # by another replica's messages still to come back).
            if between <= self._begun:
                self._begin(seqs, max(high, self._upto))
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(delay)
            delay = min(0.25, delay * 2)

    def hand_back(self, seqs: Collection[int]) -> bool:
        """The batch did not get its turn: True the first time (the caller naks it, so the earlier messages come
        first), False when these messages were handed back once already. Then what they waited for is not coming
        (a server killed mid-write can lose sequences the ack floor never passes): the caller begins them anyway,
        so the stream goes on, and says so in the log."""
        if set(seqs) & self._handed_back:
            self._handed_back.difference_update(seqs)
            self._begin(seqs, max(max(seqs), self._upto))
            return False
        self._handed_back.update(seqs)
        return True

    def abandon(self, seqs: Collection[int]) -> None:
        """The batch was naked after all: its sequences are no longer begun here, and later batches wait for them."""
        if not seqs:
            return
        self._begun.difference_update(seqs)
        self._upto = min(self._upto, min(seqs) - 1)

    def _begin(self, seqs: Collection[int], upto: int) -> None:
        self._begun.update(seqs)
        self._handed_back.difference_update(seqs)
        self._upto = upto
