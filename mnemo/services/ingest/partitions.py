"""Every ingest replica active: the partitions of the chat stream shared among the live replicas.

A replica refreshes its member key every fifth of the lease TTL, on its own (a slow tick must not let the key
expire: the others would then deal its partitions among themselves and hand them back a tick later, over and
over). Each tick (as often) it reads the live members, the stream's partition count and the ingest durables,
and works out what it should consume: the v1 router and the partitions, dealt round-robin over the members in
sorted order (``membership.assign``). What it should no longer consume it stops (the batches in flight complete
and are acknowledged) and then releases; what it should consume it takes once the lease is free. A replica that
dies stops refreshing its member key and its leases: both expire after the lease TTL, and the partitions go to
the others at their next tick. A lease lost (not refreshed for a whole
TTL) stops that partition at once, without releasing it; before that, the lease's fence (``Lease.fresh``) has
stopped its pull loop and its batches from beginning (issue 25). A pull loop that ended by itself (the fence, or
its durable deleted by the partition's next holder) is let go of at the next tick too.

Generations: while durables of an older partition count remain, only those are consumed; the holder of an old
partition deletes its durable once it holds nothing unacknowledged, and once none remains the current count's
partitions begin (mnemo/shared/partitions.py). One conversation is thus never recorded from two partitions.

Each partition has its own order gate and pull loop; their batches are recorded together by one
:class:`~mnemo.services.ingest.recorder.Recorder` behind a group commit (its cache is dropped whenever partitions
change hands: what another replica appended meanwhile is read again).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError
from nats.js.kv import KeyValue

from mnemo.services.ingest.cross_order import (
    CrossPartitionOrder,
    PartitionHandler,
    cross_order_wait_s,
    leads_its_batch,
)
from mnemo.services.ingest.domain import InboundCommand
from mnemo.services.ingest.group_commit import GroupCommit
from mnemo.services.ingest.handlers import IngestHandler, decode_command, decode_keyed
from mnemo.services.ingest.membership import Membership, assign
from mnemo.services.ingest.recorder import Recorder
from mnemo.services.ingest.v1_router import V1Router
from mnemo.shared import natsconn, subjects
from mnemo.shared.consumers import ORDER_WAIT_S, ack_floor_of, next_of
from mnemo.shared.delivery import BatchConsumer, DeadLetters, Decoder, Staged
from mnemo.shared.delivery.order import OrderGate
from mnemo.shared.delivery.pull import PullLoop, durable_config
from mnemo.shared.deps import Deps
from mnemo.shared.lease import Lease, lease_bucket
from mnemo.shared.metrics import CONSUMER_ACK_PENDING, CONSUMER_PENDING, CONSUMER_REDELIVERED
from mnemo.shared.partitions import current_count, parse_durable
from mnemo.shared.probes import CHECK_TIMEOUT_S, NotReady
from mnemo.shared.readmodels.ports import ConversationReadModel
from mnemo.shared.telemetry import tracer

log = logging.getLogger(__name__)

SERVICE = "ingest"
V1 = "v1"  # the router, dealt out like a partition
Partition = tuple[int, int]  # (count, partition)
Work = str | Partition
RELIST_TICKS = 10  # ticks between two listings of the durables while nothing says the generations changed


@dataclass
class _Held:
    lease: Lease
    loop: PullLoop
    partition: Partition | None  # None: the v1 router


@dataclass
class _Consuming:
    """A durable's pull loop and its order gate (told where the remade durable starts)."""

    loop: PullLoop
    gate: OrderGate

    async def start(self) -> None:
        self.gate.start_after(await self.loop.start(resume=True))


class PartitionManager:
    def __init__(self, deps: Deps, read_models: ConversationReadModel) -> None:
        self._deps = deps
        self._ttl_s = deps.settings.delivery.lease_ttl_s
        self._held: dict[Work, _Held] = {}
        # One recorder for every partition held here, in front of it the group commit that records their batches
        # together (``group_commit.py``).
        batch = deps.settings.delivery.ingest_batch_size
        self._recording = GroupCommit(Recorder(deps.store, read_models, deps.saver), max_commands=2 * batch)
        self._membership: Membership | None = None
        self._kv: KeyValue | None = None
        self._task: asyncio.Task[None] | None = None
        self._announcer: asyncio.Task[None] | None = None
        self._tick_began: float | None = None  # monotonic time the running tick began (None: between ticks)
        self._stopping = False
        self._ticked: int | None = None  # the members seen at the last tick (None: no tick yet)
        # The last listing of the chat stream's durables: the count it was made under, whether it found an older
        # generation's, and the ticks since (``_older``).
        self._listed: tuple[int, bool] | None = None
        self._since_listed = 0

    @property
    def held(self) -> list[Work]:
        """What this replica consumes now (the v1 router as ``"v1"``, partitions as ``(count, number)``)."""
        return list(self._held)

    def _nc(self) -> NatsClient:
        # The service's own connection (its NATS user when secured), as its FastStream subscribers would use.
        nc: NatsClient = self._deps.broker.config.connection_state.connection
        return nc

    def _js(self) -> JetStreamContext:
        return self._nc().jetstream()

    async def start(self) -> None:
        settings = self._deps.settings
        self._kv = await lease_bucket(self._js(), self._ttl_s, settings.streams.replicas)
        self._membership = Membership(self._js(), self._kv)
        self._announcer = asyncio.create_task(self._announce(), name="ingest membership")
        self._task = asyncio.create_task(self._run(), name="ingest partitions")

    async def stop(self) -> None:
        """Stop consuming (batches in flight complete), release every lease, leave the members."""
        self._stopping = True
        for task in (self._task, self._announcer):
            if task is not None:
                # Bounded: a cancellation swallowed inside a NATS call would otherwise leave the loop ticking and
                # this stop waiting for ever; the flag ends the loop at its next turn anyway.
                task.cancel()
                await asyncio.wait({task}, timeout=self._ttl_s)
        await asyncio.gather(*(self._let_go(work) for work in list(self._held)))
        if self._membership is not None:
            with contextlib.suppress(Exception):
                await self._membership.leave()

    async def readiness(self) -> str:
        """The probes' ``partitions`` check: ready once the first tick has dealt the partitions (holding none is
        fine: the others may hold them all)."""
        if self._task is not None and self._task.done():
            raise NotReady("the partition dealing has stopped")
        began = self._tick_began
        if began is not None and (stuck := time.monotonic() - began) > self._stuck_after_s:
            raise NotReady(f"a partition tick has run for {stuck:.0f} s (it should take a few)")
        if self._ticked is None:
            raise NotReady("the partitions are not dealt yet")
        return f"{describe(self.held)} ({self._ticked} members)"

    async def collect(self) -> None:
        """Before a scrape: the pending and ack-pending counts of the durables held here (KEDA reads the same)."""
        js = self._nc().jetstream(timeout=CHECK_TIMEOUT_S)
        for held in list(self._held.values()):
            info = await js.consumer_info(subjects.CHAT_STREAM, held.loop.durable)
            labels = {"stream": subjects.CHAT_STREAM, "durable": held.loop.durable}
            CONSUMER_PENDING.labels(**labels).set(info.num_pending or 0)
            CONSUMER_ACK_PENDING.labels(**labels).set(info.num_ack_pending or 0)
            CONSUMER_REDELIVERED.labels(**labels).set(info.num_redelivered or 0)

    @property
    def _stuck_after_s(self) -> float:
        """How long a tick may run: every partition let go at once, each waiting up to ``ack_wait`` for its batches
        in flight, then the takes."""
        return 2 * self._deps.settings.delivery.ack_wait_s + self._ttl_s

    async def _announce(self) -> None:
        assert self._membership is not None
        while not self._stopping:
            try:
                await self._membership.announce()
            except Exception as exc:  # NATS unreachable for now, no bucket leader yet: the next turn tries again
                log.warning("refreshing ingest's member key failed, retrying: %s", exc)
            await asyncio.sleep(self._ttl_s / 5)

    async def _run(self) -> None:
        while not self._stopping:
            self._tick_began = time.monotonic()
            try:
                await self._tick()
            except asyncio.CancelledError:
                # Only a stop ends the loop: a NATS request cut short inside the tick can surface as a
                # CancelledError too, and a replica whose loop ended silently would never hold a partition again.
                task = asyncio.current_task()
                if self._stopping or task is None or task.cancelling():
                    raise
                log.warning("ingest partition tick was cut short; retrying")
            except Exception:  # NATS unreachable for now, no stream leader yet: the next tick tries again
                log.exception("ingest partition tick failed; retrying")
            finally:
                self._tick_began = None
            await asyncio.sleep(self._ttl_s / 5)

    async def _tick(self) -> None:
        assert self._membership is not None
        # Both reads at once: their replies come back together instead of one after the other (an idle replica
        # wakes ~14 times a second, each source a little: /proc, 4 idle replicas, 2026-11-27).
        members, (count, work) = await asyncio.gather(self._membership.alive(), self._work())
        wanted = set(assign(members, work, self._membership.me))
        before = self.held
        lost = [item for item, held in self._held.items() if held.lease.lost.is_set() or held.loop.ended]
        for item in lost:
            log.error("ingest lost the lease of %s, or its durable; stopping it", self._held[item].lease.key)
        # Let go of what is no longer ours all at once: one at a time, each waiting up to 1.5 s for its open pull
        # request to end, a replica handing eight of sixteen partitions to a newcomer could spend a lease TTL.
        unwanted = [item for item in self._held if item not in wanted and item not in lost]
        await asyncio.gather(
            *(self._let_go(item, release=False) for item in lost), *(self._let_go(item) for item in unwanted)
        )
        retired: set[Work] = set()
        for item, held in list(self._held.items()):
            if (part := held.partition) is not None and part[0] != count and await self._retire_if_drained(part):
                retired.add(item)
        for item in work:
            if item in wanted and item not in self._held and item not in retired:
                # An older generation's partition is only finished, never begun: its durable must still exist (a
                # replica that retired it a moment ago deleted it; making it again would read it all again).
                older = not isinstance(item, str) and item[0] != count
                await self._take(item, only_if_durable=older)
        self._ticked = len(set(members) | {self._membership.me})
        if self.held != before:
            self._recording.forget()  # what was taken may have been written elsewhere meanwhile
            log.info("ingest consumes %s (%d members)", describe(self.held), len(set(members) | {self._membership.me}))

    async def _work(self) -> tuple[int | None, list[Work]]:
        """The partition count, and what to consume now: the v1 router, and the partitions of the oldest
        generation that still has durables."""
        count = await current_count(self._js())
        if count is None:
            log.warning("the chat stream has no partitioning transform yet; waiting")
            return None, [V1]
        older = await self._older(count)
        if older:
            return count, [V1, *older]
        return count, [V1, *((count, k) for k in range(count))]

    async def _older(self, count: int) -> list[Partition]:
        """The partitions of older generations whose durables remain. Listing every durable of the chat stream
        was ~90 % of an idle tick's CPU (py-spy, 4 replicas, 2026-11-27), and older durables appear only when
        the count changes: so the list is read again when the count differs from the last listing's, while the
        last one found older durables, and every ``RELIST_TICKS`` ticks (a replica that saw the change a tick
        late may have made one)."""
        self._since_listed += 1
        if self._listed == (count, False) and self._since_listed < RELIST_TICKS:
            return []
        names = [i.name for i in await self._js().consumers_info(subjects.CHAT_STREAM)]
        older = sorted({p for n in names if (p := parse_durable(n)) is not None and p[0] != count})
        self._listed, self._since_listed = (count, bool(older)), 0
        return older

    async def _take(self, work: Work, *, only_if_durable: bool = False) -> None:
        assert self._kv is not None
        if self._stopping:
            return
        partition = None if isinstance(work, str) else work
        name = subjects.INGEST_V1_LEASE if partition is None else subjects.partition_lease(*partition)
        lease = Lease(self._kv, name, self._ttl_s)
        if not await lease.try_acquire(quiet=True):
            return
        consuming: _Consuming | None = None
        try:
            if only_if_durable and partition is not None and not await self._durable_exists(*partition):
                await lease.release()
                return
            consuming = self._router(lease) if partition is None else self._partition(lease, *partition)
            await consuming.start()
        except Exception:
            log.exception("starting %s failed", name)
            await lease.release()
            return
        except asyncio.CancelledError:
            # A stop cancelled the tick in the middle of this take: undo it. Left as it was, the lease's refresh
            # task (held by nothing the stop lets go) kept the partition from every replica for a TTL or more.
            await self._undo_take(lease, consuming)
            raise
        self._held[work] = _Held(lease, consuming.loop, partition)

    async def _undo_take(self, lease: Lease, consuming: _Consuming | None) -> None:
        if consuming is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(consuming.loop.stop(), self._deps.settings.delivery.ack_wait_s)
        await lease.release()

    async def _let_go(self, work: Work, *, release: bool = True) -> None:
        """Stop consuming ``work`` (its batches in flight complete) and release its lease. A stop that takes longer
        than ``ack_wait`` (the database or NATS not answering) is left behind: the lease is then not released but
        left to expire, and the log's optimistic concurrency guards whatever still lands meanwhile."""
        held = self._held.pop(work)
        try:
            await asyncio.wait_for(held.loop.stop(), self._deps.settings.delivery.ack_wait_s)
        except Exception:
            log.exception("stopping %s did not finish; its lease is left to expire", held.lease.key)
            release = False
        finally:
            if release:
                await held.lease.release()
            else:
                await held.lease.stop_refreshing()
        log.info("ingest stopped consuming %s", held.lease.key)

    async def _durable_exists(self, count: int, partition: int) -> bool:
        try:
            await self._js().consumer_info(subjects.CHAT_STREAM, subjects.partition_durable(count, partition))
        except NotFoundError:
            return False
        return True

    async def _retire_if_drained(self, work: Partition) -> bool:
        """An older generation's partition: once it holds nothing unacknowledged, stop it and delete its durable
        (True: retired)."""
        count, partition = work
        durable = subjects.partition_durable(count, partition)
        try:
            info = await self._js().consumer_info(subjects.CHAT_STREAM, durable)
        except NotFoundError:
            await self._let_go(work)
            return True
        if info.num_pending or info.num_ack_pending:
            return False
        await self._let_go(work)
        await self._js().delete_consumer(subjects.CHAT_STREAM, durable)
        log.info("partition %d of %d drained: its durable is deleted", partition, count)
        return True

    # --- consumers ------------------------------------------------------------------------------------
    def _consuming(
        self,
        lease: Lease,
        decode: Decoder[InboundCommand],
        handle: Staged[InboundCommand],
        durable: str,
        filter_subject: str,
    ) -> _Consuming:
        deps, delivery, stream = self._deps, self._deps.settings.delivery, subjects.CHAT_STREAM
        gate = OrderGate(
            ack_floor_of(deps, stream, durable), next_of(deps, stream, filter_subject), wait_s=ORDER_WAIT_S
        )
        consumer = BatchConsumer(
            decode=decode,
            handle=handle,
            dead_letters=DeadLetters(deps.broker, SERVICE),
            max_deliver=delivery.max_deliver,
            ack_wait_s=delivery.ack_wait_s,
            tracer=tracer(SERVICE, deps.settings.telemetry),
            in_flight=delivery.pipeline_depth,
            gate=gate,
            may_begin=lease.fresh,  # the fence: nothing begins once another replica may hold the partition
        )
        batch = delivery.ingest_batch_size
        config = durable_config(durable, filter_subject, delivery.model_copy(update={"batch_size": batch}))
        inbox = natsconn.inbox_prefix(natsconn.nats_user(deps.settings, SERVICE))
        loop = PullLoop(
            self._nc(), stream, config, consumer, batch_size=batch, inbox_prefix=inbox, may_consume=lease.fresh
        )
        return _Consuming(loop, gate)

    def _partition(self, lease: Lease, count: int, partition: int) -> _Consuming:
        limits = self._deps.settings.limits

        def decode(msg: Msg) -> InboundCommand:
            return decode_keyed(msg.subject, msg.data, limits)

        order = CrossPartitionOrder(self._js(), count, partition)
        delivery = self._deps.settings.delivery
        wait_s = cross_order_wait_s(delivery.ack_wait_s, delivery.lease_ttl_s)
        handler = PartitionHandler(
            IngestHandler(self._recording, partition=str(partition)), order, partition, wait_s=wait_s
        )
        durable, held = subjects.partition_durable(count, partition), subjects.partition_subjects(count, partition)
        return self._consuming(lease, decode, Staged(handler.begin, leads=leads_its_batch), durable, held)

    def _router(self, lease: Lease) -> _Consuming:
        limits = self._deps.settings.limits

        def decode(msg: Msg) -> InboundCommand:
            return decode_command(msg.subject, msg.data, limits)

        router = V1Router(self._js())
        return self._consuming(
            lease, decode, Staged(router.begin), subjects.INGEST_V1_DURABLE, subjects.CHAT_UNPARTITIONED
        )


def describe(held: Sequence[Work]) -> str:
    """``v1, 3/16, 7/16``: what a replica consumes, for its log."""
    ordered = sorted(held, key=lambda w: (0, 0, 0) if isinstance(w, str) else (1, *w))
    return ", ".join(w if isinstance(w, str) else f"{w[1]}/{w[0]}" for w in ordered) or "nothing"
