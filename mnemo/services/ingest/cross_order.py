"""The ordering that crosses partitions: a fork is recorded after its parent's earlier messages.

Within a partition, stream order is record order (the order gate). ``conversation.forked`` is keyed by the new
conversation, so it may sit in another partition than the parent it copies. Decided before that partition has
recorded the parent's messages published before it, the fork would be refused ("not recorded") or copy an
outdated text. So the parent's partition must first have acknowledged every message it holds below the fork's
stream sequence: it holds nothing unacknowledged, or its ack floor is past ``seq - 1``, or the first message of its
filter past the floor lies beyond it (:func:`settled_before`, one or two JetStream API calls). When it has not,
:class:`NotYetInOrder` makes the batch wait (:class:`PartitionHandler`): nothing after the fork in its own
partition overtakes it. A fork leads a batch of its own (:func:`leads_its_batch`): what precedes it in its
partition is completed and acked without waiting for it. Fetched in one batch, ``[parent of B, fork A]`` in one
partition and ``[parent of A, fork B]`` in the other waited on each other until the bound ran out, and then
each fork raced its parent (the bad-input fuzz test dead-lettered one as "not recorded", CI 2026-11-28). Now
a fork waits only for messages below it in other partitions, and those never wait for anything at or above it.

(A v1 event and a keyed event of one conversation are another matter, with no remedy here: the v1 event's keyed
copy lands in the partition one hop later, so a keyed event published right after it is recorded first. A
platform moves a conversation's publishing from v1 to keyed subjects as a whole: docs/scaling.md.)
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from mnemo.services.ingest.domain import InboundCommand
from mnemo.services.ingest.handlers import IngestHandler
from mnemo.shared import subjects
from mnemo.shared.delivery import Completion, Item
from mnemo.shared.partitions import partition_of
from mnemo_client.wire.contract import ConversationForked
from mnemo_client.wire.keyed import subject_token

log = logging.getLogger(__name__)


def cross_order_wait_s(ack_wait_s: float, lease_ttl_s: float) -> float:
    """How long a batch waits for another durable it depends on (a fork's parent partition) before it goes on
    anyway: longer than a takeover (the dead replica's lease runs out, its batch comes back after ``ack_wait``
    and is recorded), and no longer. Two forks in two partitions, each waiting on the other's, hold both
    partitions that long (the bad-input fuzz test's random forks met it: with a fixed 300 s, ingest stood still
    past the test's 2 minutes), so the bound is what a takeover needs: 70 s at the defaults."""
    return lease_ttl_s + 2 * ack_wait_s


def leads_its_batch(msg: Msg) -> bool:
    """Whether ``msg`` (as stored in a partition) is a fork, which begins a batch of its own (``Staged.leads``)."""
    return subjects.v1_of(subjects.public_subject(msg.subject)) == subjects.CONVERSATION_FORKED


class NotYetInOrder(RuntimeError):
    """What the batch depends on in another durable is not recorded yet: the batch is retried shortly."""


async def settled_before(js: JetStreamContext, durable: str, filter_subject: str, seq: int) -> bool:
    """Whether ``durable`` (filter ``filter_subject``) has acknowledged every message of its filter below ``seq``."""
    try:
        info = await js.consumer_info(subjects.CHAT_STREAM, durable)
    except NotFoundError:
        floor = 0  # never consumed: settled only if its filter holds nothing below ``seq``
    else:
        if not info.num_pending and not info.num_ack_pending:
            return True
        floor = info.ack_floor.stream_seq if info.ack_floor and info.ack_floor.stream_seq else 0
    if floor >= seq - 1:
        return True
    try:
        following = await js.get_msg(subjects.CHAT_STREAM, seq=floor + 1, next=True, subject=filter_subject)
    except NotFoundError:
        return True  # nothing of its filter past the floor at all
    return (following.seq or 0) >= seq


class CrossPartitionOrder:
    def __init__(self, js: JetStreamContext, count: int, partition: int) -> None:
        self._js = js
        self._count = count
        self._partition = partition

    async def check(self, items: Sequence[Item[InboundCommand]]) -> None:
        """Raise ``NotYetInOrder`` when a fork of the batch must wait for its parent's partition."""
        for item in items:
            if isinstance(cmd := item.value, ConversationForked):
                await self._after_parent(cmd, item.msg.metadata.sequence.stream)

    async def _after_parent(self, fork: ConversationForked, seq: int) -> None:
        parent = partition_of(subject_token(fork.tenant_id), subject_token(fork.parent_conversation_id), self._count)
        if parent == self._partition:
            return  # the same partition: stream order already
        durable = subjects.partition_durable(self._count, parent)
        if not await settled_before(self._js, durable, subjects.partition_subjects(self._count, parent), seq):
            raise NotYetInOrder(
                f"fork {fork.conversation_id!r} waits for partition {parent} to record its parent "
                f"{fork.parent_conversation_id!r} up to stream sequence {seq}"
            )


class PartitionHandler:
    """A partition's staged handler: what depends on another durable waits for it (:class:`CrossPartitionOrder`,
    at most ``wait_s``, then it goes on, logged), then the recorder's two stages. ``partition`` is
    the number (ops metrics label batches with it)."""

    def __init__(self, ingest: IngestHandler, order: CrossPartitionOrder, partition: int, *, wait_s: float) -> None:
        self._ingest = ingest
        self._order = order
        self.partition = partition
        self._wait_s = wait_s

    async def begin(self, items: list[Item[InboundCommand]]) -> Completion:
        deadline = time.monotonic() + self._wait_s
        delay = 0.05
        while True:
            try:
                await self._order.check(items)
                break
            except NotYetInOrder as wait:
                if time.monotonic() >= deadline:
                    log.warning("partition %d: going on after %.0f s: %s", self.partition, self._wait_s, wait)
                    break
                await asyncio.sleep(delay)
                delay = min(1.0, delay * 2)
        return await self._ingest.begin(items)
