"""Stream-order gate: an ordered consumer begins its batches in stream order, across crashes and redeliveries.

JetStream redelivers late: a message delivered to a replica that died (or to a connection a NATS node dropped)
comes back only after ``ack_wait``, behind newer messages. Recorded in fetch order, a conversation would then be
out of order. The gate lets a batch begin only when every earlier stream message is either acknowledged (the
consumer's ack floor, which NATS keeps for the durable), was already begun here, or does not exist (a sequence
the stream deleted or never stored). One replica with consecutive batches never asks the server (the fast
path).

A batch begins up to its first earlier message still out; the part after it is handed back (the caller naks
it with a delay of ``ack_wait``, so the earlier messages, whose ``ack_wait`` ran out first, are redelivered
before it). A batch with nothing to begin waits ``wait_s`` first (acks in flight move the floor). The replica
keeps pulling meanwhile: it never blocks on messages that only its own pulls can bring back. A message that
cannot be handed back again (JetStream stops redelivering after ``max_deliver``) begins anyway, logged.

Why not partitions: the v1 chat subjects carry no conversation id, so a subject transform cannot route a
conversation to one partition; a router hop would write every message twice. Ingest's limit is the store (see
``make bench-scale``), so its replicas are for availability (one active, mnemo/shared/lease.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection

AckFloor = Callable[[], Awaitable[int]]
"""The durable's ack floor as a stream sequence: every message at or below it is acknowledged."""
Absent = Callable[[Collection[int]], Awaitable[set[int]]]
"""Which of these stream sequences hold no message (deleted, or never stored): nothing will deliver them."""


class OrderGate:
    def __init__(self, ack_floor: AckFloor, absent: Absent, *, wait_s: float, poll_s: float = 0.02) -> None:
        self._ack_floor = ack_floor
        self._absent = absent
        self._wait_s = wait_s
        self._poll_s = poll_s
        self._upto = 0  # every sequence <= this is acked, begun here or absent, in order
        self._begun: set[int] = set()  # begun here (or absent) and maybe not acked yet (pruned below the floor)

    async def admit(self, seqs: Collection[int]) -> set[int]:
        """The sequences of the batch that may begin now, begun: all of them, or the part before the first
        earlier message still out (at once: what comes before a gap never waits for it), or none after
        ``wait_s`` (acks in flight may move the floor meanwhile). The caller hands back the others."""
        if not seqs:
            return set()
        batch = set(seqs)
        low, high = min(batch), max(batch)
        if low == self._upto + 1 and high - low + 1 == len(batch):  # the next consecutive run: nothing between
            self._begin(batch, high)
            return batch
        deadline = time.monotonic() + self._wait_s
        delay = self._poll_s
        probed = False
        while True:
            floor = await self._ack_floor()
            self._begun = {s for s in self._begun if s > floor}
            missing = set(range(floor + 1, high)) - batch - self._begun
            if missing and not probed:  # asked once per wait: a gap in the stream is never delivered
                probed = True
                gone = await self._absent(missing)
                self._begun |= gone
                missing -= gone
            if not missing:
                self._begin(batch, max(high, self._upto))
                return batch
            first_out = min(missing)
            before = {s for s in batch if s < first_out}
            if before or time.monotonic() >= deadline:
                if before:
                    self._begin(before, max(max(before), self._upto))
                return before
            await asyncio.sleep(delay)
            delay = min(0.25, delay * 2)

    def begin_anyway(self, seqs: Collection[int]) -> None:
        """Begin messages out of turn: they cannot be handed back again (JetStream's ``max_deliver``)."""
        if seqs:
            self._begin(seqs, max(max(seqs), self._upto))

    def abandon(self, seqs: Collection[int]) -> None:
        """The batch was naked after all: its sequences are no longer begun here, and later batches wait for them."""
        if not seqs:
            return
        self._begun.difference_update(seqs)
        self._upto = min(self._upto, min(seqs) - 1)

    def _begin(self, seqs: Collection[int], upto: int) -> None:
        self._begun.update(seqs)
        self._upto = upto
