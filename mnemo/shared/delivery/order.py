"""Stream-order gate: an ordered consumer begins its batches in stream order, across crashes and redeliveries.

JetStream redelivers late: a message delivered to a replica that died (or to a connection a NATS node dropped)
comes back only after ``ack_wait``, behind newer messages. Recorded in fetch order, a conversation would then be
out of order. The gate lets a batch begin only when every earlier message *of the consumer's filter* (an ingest
partition's subjects) is either acknowledged (the durable's ack floor, which NATS keeps), was already begun
here, or does not exist (deleted, never stored, or another subject's: nothing will deliver it to this consumer).

Two fast paths never ask the server: a batch whose stream sequences follow on from the last one with nothing
between; and first deliveries whose consumer sequences follow on from the previous batch's, after a batch that
began whole (no delivery went to anyone else in between, and JetStream delivers first deliveries in stream
order, so nothing of the filter lies between the two batches), while nothing handed back here is still out
(``_follows_on``). Otherwise the gate reads the ack floor and walks
the filter's messages from there (``NextOf``: one ``STREAM.MSG.GET`` by subject each) up to the batch, to the first
one neither in the batch nor begun here: the message still out.

A batch begins up to its first earlier message still out; the part after it is handed back (the caller naks
it with a delay of ``ack_wait``, so the earlier messages, whose ``ack_wait`` ran out first, are redelivered
before it). A batch with nothing to begin waits ``wait_s`` first (acks in flight move the floor). The replica
keeps pulling meanwhile: it never blocks on messages that only its own pulls can bring back. A message that
cannot be handed back again (JetStream stops redelivering after ``max_deliver``) begins anyway, logged.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection

AckFloor = Callable[[], Awaitable[int]]
"""The durable's ack floor as a stream sequence: every message of its filter at or below it is acknowledged."""
NextOf = Callable[[int], Awaitable[int | None]]
"""The stream sequence of the first message of the consumer's filter at or after this one (None: there is none)."""
Delivery = tuple[int, int]
"""(consumer sequence, times delivered) of one message, from its JetStream metadata."""

#: Messages walked past per look (each one ``STREAM.MSG.GET``) before the gate waits rather than look further.
WALK_LIMIT = 256


class OrderGate:
    def __init__(self, ack_floor: AckFloor, next_of: NextOf, *, wait_s: float, poll_s: float = 0.02) -> None:
        self._ack_floor = ack_floor
        self._next_of = next_of
        self._wait_s = wait_s
        self._poll_s = poll_s
        self._upto = 0  # every sequence <= this is acked, begun here or not the filter's, in order
        self._begun: set[int] = set()  # begun here and maybe not acked yet (pruned below the floor)
        self._last_delivery = -1  # the highest consumer sequence seen (-1: none yet)
        self._whole = False  # the last batch began whole (the delivery fast path may follow it)
        # Delivered here, then handed back (not begun, or abandoned) and not begun since nor acked: out, below
        # whatever first delivery follows, so the delivery fast path waits until there is none.
        self._out: set[int] = set()

    def start_after(self, seq: int) -> None:
        """The durable was (re)made to deliver from ``seq + 1`` on, first deliveries in stream order from consumer
        sequence 1: nothing at or below ``seq`` is waited for, and its first batches take the fast path."""
        self._upto, self._begun, self._last_delivery, self._whole, self._out = seq, set(), 0, True, set()

    async def admit(self, seqs: Collection[int], deliveries: Collection[Delivery] = ()) -> set[int]:
        """The sequences of the batch that may begin now, begun: all of them, or the part before the first
        earlier message still out (at once: what comes before a gap never waits for it), or none after
        ``wait_s`` (acks in flight may move the floor meanwhile). The caller hands back the others.
        ``deliveries``: the batch's (consumer sequence, times delivered), for the delivery fast path."""
        if not seqs:
            return set()
        batch = set(seqs)
        first_only = bool(deliveries) and _first_and_contiguous(deliveries)
        begun = await self._admit(batch, first_only and self._follows_on(deliveries) and min(batch) > self._upto,
                                  first_only)  # fmt: skip
        self._whole = begun == batch
        self._out |= batch - begun  # the caller hands these back
        if deliveries:
            self._last_delivery = max(self._last_delivery, max(c for c, _ in deliveries))
        return begun

    def _follows_on(self, deliveries: Collection[Delivery]) -> bool:
        """Consumer sequences following on from the last batch's, after a batch begun whole, with nothing handed
        back still out.

        A message handed back (naked) was delivered before the previous batch and lies below this one however the
        consumer sequences follow on. Without that condition (the interleaving that fits issue 25's ``make chaos``
        failure, m00150 recorded after m00151-m00154 of three conversations; reproduced on a real nats-server in
        tests/integration/test_delivery.py): m00149's completion fails as the database goes down (abandoned,
        naked with backoff); m00150 arrives, waits for it and is handed back (naked for ``ack_wait``); m00149
        comes back and begins alone; m00151 follows on from it and begins at once; m00150 is recorded
        ``ack_wait`` later, after the rest."""
        return self._whole and not self._out and min(c for c, _ in deliveries) == self._last_delivery + 1

    async def _admit(self, batch: set[int], follows_on: bool, first_only: bool) -> set[int]:
        low, high = min(batch), max(batch)
        if follows_on or (low == self._upto + 1 and high - low + 1 == len(batch)):  # nothing between: at once
            self._begin(batch, high)
            return batch
        # First deliveries of consecutive consumer sequences went to no one else and come in stream order: nothing
        # of the filter between them is out, so only what lies below the batch is looked at.
        upper = low if first_only else high
        deadline = time.monotonic() + self._wait_s
        delay = self._poll_s
        while True:
            first_out = await self._first_out(batch, upper)
            if first_out is None:
                self._begin(batch, max(high, self._upto))
                return batch
            before = {s for s in batch if s < first_out}
            if before or time.monotonic() >= deadline:
                if before:
                    self._begin(before, max(max(before), self._upto))
                return before
            await asyncio.sleep(delay)
            delay = min(0.25, delay * 2)

    async def _first_out(self, batch: set[int], high: int) -> int | None:
        """The lowest message of the filter below ``high`` that is neither acked, in the batch nor begun here."""
        floor = await self._ack_floor()
        self._begun = {s for s in self._begun if s > floor}
        self._out = {s for s in self._out if s > floor}
        seq = max(floor, self._upto) + 1
        for _ in range(WALK_LIMIT):
            found = await self._next_of(seq) if seq < high else None
            if found is None or found >= high:
                return None
            if found not in batch and found not in self._begun:
                return found
            seq = found + 1
        return seq  # walked far without an answer: wait as if the next one were out

    def begin_anyway(self, seqs: Collection[int]) -> None:
        """Begin messages out of turn: they cannot be handed back again (JetStream's ``max_deliver``)."""
        if seqs:
            self._begin(seqs, max(max(seqs), self._upto))

    def abandon(self, seqs: Collection[int]) -> None:
        """The batch was naked after all: its sequences are no longer begun here, and later batches wait for them."""
        if not seqs:
            return
        self._begun.difference_update(seqs)
        self._out.update(seqs)
        self._upto = min(self._upto, min(seqs) - 1)
        self._whole = False

    def _begin(self, seqs: Collection[int], upto: int) -> None:
        self._begun.update(seqs)
        self._out.difference_update(seqs)
        self._upto = upto


def _first_and_contiguous(deliveries: Collection[Delivery]) -> bool:
    """Only first deliveries, with consecutive consumer sequences."""
    if any(n != 1 for _, n in deliveries):
        return False
    consumer = sorted(c for c, _ in deliveries)
    return consumer[-1] - consumer[0] + 1 == len(consumer)
