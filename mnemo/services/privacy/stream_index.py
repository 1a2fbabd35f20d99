"""Whose each message of a JetStream stream is, read once: an erasure deletes its messages by sequence.

The streams' subjects do not name tenants, so finding a user's messages means reading bodies. Reading each
whole stream for every erasure made erasures cost time in proportion to the streams (the 100,000-case fuzz
run, with an erasure every few seconds, slowed down as the log grew). An :class:`OwnerIndex` reads only what
was published since its last reading and keeps, per tenant and user, the sequences of their messages: about
8 bytes a message in the privacy service's memory, pruned as retention removes the oldest. After a restart
the first erasure reads the streams whole once, as before.

Not thread-safe and not for concurrent use: ``stream_purge.SharedPasses`` runs one reading at a time.
"""

from __future__ import annotations

import contextlib
from array import array
from collections.abc import Callable
from datetime import datetime

from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import APIError, NotFoundError

BATCH = 256
NO_MESSAGE = 10057  # the JetStream API's error code for deleting a message that is not there
#: Prune the pruned-away sequences once retention moved the stream's start by this much (or a quarter of the
#: indexed messages, whichever is more): pruning walks the whole index.
PRUNE_AFTER = 10_000

Owner = tuple[str, str | None]  # (tenant_id, user_id); None: the tenant's, no user's (a bot, an unknown type)
OwnerOf = Callable[[bytes], Owner | None]


class IncompleteReading(RuntimeError):
    """The stream could not be read to its end in time; the erasure fails and is called again."""


class OwnerIndex:
    def __init__(self, stream: str, subject: str, owner_of: OwnerOf) -> None:
        self.stream, self.subject, self._owner_of = stream, subject, owner_of
        self._created: datetime | None = None  # the stream's creation time: another means it was made again
        self._reset()

    def _reset(self) -> None:
        self._next = 1  # the first sequence not read yet
        self._floor = 1  # sequences below it were pruned
        self._seqs: dict[str, dict[str | None, array[int]]] = {}
        self.indexed = 0

    async def catch_up(self, js: JetStreamContext) -> None:
        """Read every message published since the last reading (everything, the first time)."""
        try:
            info = await js.stream_info(self.stream)
        except NotFoundError:
            self._reset()
            return
        state = info.state
        if info.created != self._created or state.last_seq < self._next - 1:  # deleted and made again
            self._reset()
            self._created = info.created
        self._prune(state.first_seq)
        if state.messages == 0 or state.last_seq < self._next:
            self._next = max(self._next, state.last_seq + 1)
            return
        start = max(self._next, state.first_seq)
        config = ConsumerConfig(
            ack_policy=AckPolicy.NONE,
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=start,
            inactive_threshold=60.0,
        )
        sub = await js.pull_subscribe(self.subject, stream=self.stream, config=config)
        try:
            while True:
                try:
                    msgs = await sub.fetch(BATCH, timeout=2.0)
                except NatsTimeout:
                    if (await sub.consumer_info()).num_pending:
                        raise IncompleteReading(f"{self.stream}: no messages for 2 s with some pending") from None
                    break
                for msg in msgs:
                    self._add(msg.metadata.sequence.stream, msg.data)
                if not msgs or msgs[-1].metadata.num_pending == 0:
                    break
        finally:
            # Unsubscribing leaves an ephemeral consumer on the server until its inactive threshold.
            with contextlib.suppress(Exception):
                await js.delete_consumer(self.stream, (await sub.consumer_info()).name)
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        self._next = max(self._next, state.last_seq + 1)

    def _add(self, seq: int, body: bytes) -> None:
        self._next = max(self._next, seq + 1)
        owner = self._owner_of(body)
        if owner is not None:
            tenant, user = owner
            self._seqs.setdefault(tenant, {}).setdefault(user, array("q")).append(seq)
            self.indexed += 1

    def take(self, tenant_id: str, user_id: str | None) -> list[int]:
        """Remove and return the sequences of the user's messages (every message of the tenant's for None)."""
        users = self._seqs.get(tenant_id)
        if users is None:
            return []
        taken = (
            users.pop(user_id, array("q"))
            if user_id is not None
            else array("q", [s for a in users.values() for s in a])
        )
        if user_id is None or not users:
            self._seqs.pop(tenant_id, None)
        self.indexed -= len(taken)
        return list(taken)

    def put_back(self, tenant_id: str, user_id: str | None, seqs: list[int]) -> None:
        """Sequences taken but not deleted (the deleting failed): the erasure called again finds them."""
        if seqs:
            self._seqs.setdefault(tenant_id, {}).setdefault(user_id, array("q")).extend(seqs)
            self.indexed += len(seqs)

    async def delete(self, js: JetStreamContext, tenant_id: str, user_id: str | None) -> int:
        """Delete the user's (the tenant's) indexed messages; returns how many were still there."""
        seqs = self.take(tenant_id, user_id)
        deleted = 0
        for i, seq in enumerate(seqs):
            try:
                deleted += await _delete(js, self.stream, seq)
            except BaseException:
                self.put_back(tenant_id, user_id, seqs[i:])
                raise
        return deleted

    def _prune(self, first_seq: int) -> None:
        if first_seq - self._floor < max(PRUNE_AFTER, self.indexed // 4):
            return
        kept: dict[str, dict[str | None, array[int]]] = {}
        count = 0
        for tenant, users in self._seqs.items():
            for user, seqs in users.items():
                live = array("q", (s for s in seqs if s >= first_seq))
                if live:
                    kept.setdefault(tenant, {})[user] = live
                    count += len(live)
        self._seqs, self.indexed, self._floor = kept, count, first_seq


async def _delete(js: JetStreamContext, stream: str, seq: int) -> int:
    """1 if the message was deleted, 0 if it was gone already (retention, another replica's erasure)."""
    try:
        await js.delete_msg(stream, seq)
    except NotFoundError:  # the stream itself is gone
        return 0
    except APIError as exc:
        if exc.err_code != NO_MESSAGE:
            raise
        return 0
    return 1
