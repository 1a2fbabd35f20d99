"""Removing a user's messages from JetStream streams (chat, log relay, dead letters).

Chat messages arrive from the platform in plaintext (mnemo cannot encrypt what it has not received yet), and
a dead letter keeps the body it could not process, so crypto-shredding does not reach them: erasure deletes
each message of the user from those streams by sequence. The log stream (``mnemo.log.>``) carries only the
log's encrypted form and ids, shredded with the keys; its messages of the user are deleted too, so that no
consumer still behind folds their plaintext events (ids, flags) into rows after the erasure. Retention limits
bound all of them anyway.

Whose a message is comes from its body (:func:`owner_of`); the sequences come from an index of each stream
(``stream_index.OwnerIndex``) brought up to date by a reading of what was published since the last one.
Erasures waiting at the same time share that reading (:class:`SharedPasses`), which starts after they asked,
so it sees every message of theirs published before.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar

from nats.js import JetStreamContext

from mnemo.services.privacy.stream_index import Owner, OwnerIndex
from mnemo.shared.events.envelope import UnknownEventType
from mnemo.shared.events.recorded import REGISTRY

T = TypeVar("T")


def owner_of(body: bytes) -> Owner | None:
    """The tenant and user a message body (a chat payload, a log event, relayed or dead-lettered) belongs to;
    the user is None for a bot's (bots stay, whoever created them) or an event type this version does not know;
    None for a body without a tenant (not JSON, not an object)."""
    try:
        doc: Any = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(doc, dict) or not isinstance(tenant := doc.get("tenant_id"), str):
        return None
    payload = doc.get("payload")
    if isinstance(payload, dict) and isinstance(doc.get("type"), str):  # a log event
        try:
            return tenant, REGISTRY.get(doc["type"]).owner(payload)
        except UnknownEventType:
            return tenant, None
    user = doc.get("user_id")  # a chat payload (a bot's has no user_id)
    return tenant, user if isinstance(user, str) else None


class SharedPasses(Generic[T]):
    """One pass at a time over the streams, shared by every erasure that waits for one.

    An erasure waits for a pass that starts after it asked (one already under way may have gone by its
    messages), so its messages are found as surely as with a pass of its own; the ones that asked meanwhile
    go together in the next. ``run_pass`` takes what each asked for and returns how many messages each took."""

    def __init__(self, run_pass: Callable[[Sequence[T]], Awaitable[list[int]]]) -> None:
        self._run_pass = run_pass
        self._waiting: list[tuple[T, asyncio.Future[int]]] = []
        self._runner: asyncio.Task[None] | None = None
        self.passes = 0  # how many passes ran (tests, logs)

    async def purge(self, target: T) -> int:
        done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiting.append((target, done))
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._run())
        return await done

    async def _run(self) -> None:
        batch: list[tuple[T, asyncio.Future[int]]] = []
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                self.passes += 1
                try:
                    counts = await self._run_pass([target for target, _ in batch])
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


def stream_passes(js: JetStreamContext, streams: Sequence[tuple[str, str]]) -> SharedPasses[Owner]:
    """Shared passes over ``streams`` (name, subject filter): each brings their indexes up to date, then
    deletes the messages of every (tenant, user) that asked (user None: the whole tenant)."""
    indexes = [OwnerIndex(stream, subject, owner_of) for stream, subject in streams]

    async def run_pass(targets: Sequence[Owner]) -> list[int]:
        for index in indexes:
            await index.catch_up(js)
        return [sum([await index.delete(js, *target) for index in indexes]) for target in targets]

    return SharedPasses(run_pass)
