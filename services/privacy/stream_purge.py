"""Removing a user's messages from JetStream streams (chat, log relay, dead letters).

Chat messages arrive from the platform in plaintext (mnemo cannot encrypt what it has not received yet), and
a dead letter keeps the body it could not process, so crypto-shredding does not reach them: erasure deletes
each message of the user from those streams by sequence. The log stream (``mnemo.log.>``) carries only the
log's encrypted form and ids, shredded with the keys; its messages of the user are deleted too, so that no
consumer still behind folds their plaintext events (ids, flags) into rows after the erasure. Retention limits
bound all of them anyway.

Finding them is a full pass over each stream (an ephemeral consumer, no acks, deleted after the pass): the
subjects do not name tenants. A pass costs time in proportion to the streams, so erasures waiting at the same
time share one (:class:`SharedPasses`): a flood of them costs one pass per pass's duration, not one each
(the 100,000-case fuzz run sent an erasure every few seconds and each waited for all the passes before it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from shared.events.envelope import UnknownEventType
from shared.events.recorded import REGISTRY

BATCH = 256
Match = Callable[[bytes], bool]


def belongs_to(tenant_id: str, user_id: str | None) -> Match:
    """Whether a message body (a chat payload, or a log event in a dead letter) is the user's (tenant's)."""

    def match(body: bytes) -> bool:
        try:
            doc: Any = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError):
            return False
        if not isinstance(doc, dict) or doc.get("tenant_id") != tenant_id:
            return False
        if user_id is None:
            return True
        payload = doc.get("payload")
        if isinstance(payload, dict) and isinstance(doc.get("type"), str):  # a log event, relayed or dead-lettered
            try:
                return REGISTRY.get(doc["type"]).owner(payload) == user_id  # bots stay, whoever created them
            except UnknownEventType:
                return False
        return bool(doc.get("user_id") == user_id)  # a chat payload (a bot's has no user_id)

    return match


async def purge(js: JetStreamContext, stream: str, subject: str, matches: Sequence[Match]) -> list[int]:
    """Delete the messages of ``stream`` whose body one of ``matches`` takes, in one pass; returns how many
    each took (a message counts for the first that takes it). A missing or empty stream: zeros."""
    counts = [0] * len(matches)
    try:
        info = await js.stream_info(stream)
    except NotFoundError:
        return counts
    if info.state.messages == 0:
        return counts
    config = ConsumerConfig(ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.ALL, inactive_threshold=60.0)
    sub = await js.pull_subscribe(subject, stream=stream, config=config)
    try:
        while True:
            try:
                msgs = await sub.fetch(BATCH, timeout=2.0)
            except NatsTimeout:
                break
            for msg in msgs:
                taker = next((i for i, match in enumerate(matches) if match(msg.data)), None)
                if taker is not None:
                    await js.delete_msg(stream, msg.metadata.sequence.stream)
                    counts[taker] += 1
            if not msgs or msgs[-1].metadata.num_pending == 0:
                break
    finally:
        # Unsubscribing leaves an ephemeral consumer on the server until its inactive threshold.
        with contextlib.suppress(Exception):
            await js.delete_consumer(stream, (await sub.consumer_info()).name)
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
    return counts


Pass = Callable[[Sequence[Match]], Awaitable[list[int]]]


class SharedPasses:
    """One pass at a time over the streams, shared by every erasure that waits for one.

    An erasure waits for a pass that starts after it asked (one already under way may have gone by its
    messages), so its messages are found as surely as with a pass of its own; the ones that asked meanwhile
    go together in the next. ``run_pass`` takes the matchers and returns how many messages each took."""

    def __init__(self, run_pass: Pass) -> None:
        self._run_pass = run_pass
        self._waiting: list[tuple[Match, asyncio.Future[int]]] = []
        self._runner: asyncio.Task[None] | None = None
        self.passes = 0  # how many passes ran (tests, logs)

    async def purge(self, match: Match) -> int:
        done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiting.append((match, done))
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._run())
        return await done

    async def _run(self) -> None:
        batch: list[tuple[Match, asyncio.Future[int]]] = []
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                self.passes += 1
                try:
                    counts = await self._run_pass([match for match, _ in batch])
                except Exception as exc:  # the waiters see the failure (and retry the erasure)
                    for _, done in batch:
                        if not done.done():
                            done.set_exception(exc)
                    continue
                for (_, done), count in zip(batch, counts, strict=True):
                    if not done.done():
                        done.set_result(count)
        finally:  # cancelled (the service stops): nobody waits for a pass that will not come
            for _, done in [*batch, *self._waiting]:
                done.cancel()


def stream_passes(js: JetStreamContext, streams: Sequence[tuple[str, str]]) -> SharedPasses:
    """Shared passes over ``streams`` (name, subject filter), one after the other."""

    async def run_pass(matches: Sequence[Match]) -> list[int]:
        total = [0] * len(matches)
        for stream, subject in streams:
            for i, n in enumerate(await purge(js, stream, subject, matches)):
                total[i] += n
        return total

    return SharedPasses(run_pass)
