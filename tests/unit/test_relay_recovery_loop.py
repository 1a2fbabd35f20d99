"""The relay's recovery loop beside its own fast path (in-memory store): it leaves alone what the fast path still
publishes, and a failed fast-path publish wakes it instead of waiting out its idle back-off."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from pydantic import BaseModel

from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore
from mnemo.shared.eventlog.codec import EventCodec
from mnemo.shared.eventlog.inmemory import InMemoryEventStore
from mnemo.shared.eventlog.relay import Outgoing, Relay
from mnemo.shared.events.envelope import EventRegistry, NewEvent


class Note(BaseModel):
    text: str


def codec() -> EventCodec:
    registry = EventRegistry()
    registry.register("note.taken", Note, encrypted=("text",))
    return EventCodec(registry, FieldCipher(bytes(range(32)), InMemoryKeyStore()))


def notes(*ids: str) -> list[NewEvent]:
    return [NewEvent(event_id=i, type="note.taken", tenant_id="t1", payload={"text": i}) for i in ids]


class Publisher:
    """Publishes, or fails every message while ``down``; remembers what went out."""

    def __init__(self) -> None:
        self.down = False
        self.sent: list[str] = []

    async def publish_all(self, messages: Sequence[Outgoing]) -> list[BaseException | None]:
        if self.down:
            return [ConnectionError("nats down")] * len(messages)
        self.sent += [m.msg_id for m in messages]
        return [None] * len(messages)


async def test_recovery_leaves_its_own_fast_path_alone() -> None:
    store = InMemoryEventStore(codec())
    publisher = Publisher()
    relay = Relay(store, publisher, store.codec, min_age_s=0)
    result = await store.append("notes/t1", 0, notes("a", "b"))

    assert await relay.recover_once() == 0  # appended here, not yet published by its fast path: left to it
    await relay.publish_committed(result.committed)
    assert publisher.sent == ["a", "b"]  # once each
    assert await relay.recover_once() == 0


async def test_a_failed_fast_path_publish_wakes_the_idle_recovery_loop() -> None:
    store = InMemoryEventStore(codec())
    publisher = Publisher()
    # An hour between idle rounds: only the wake can bring the recovery round that publishes the events.
    relay = Relay(store, publisher, store.codec, min_age_s=0, interval_s=3600)
    loop = asyncio.create_task(relay.run())
    try:
        await asyncio.sleep(0.05)  # the first round found nothing; the loop now waits
        result = await store.append("notes/t1", 0, notes("c"))
        publisher.down = True
        await relay.publish_committed(result.committed)  # fails: the events stay unpublished, the loop wakes
        publisher.down = False
        async with asyncio.timeout(30):
            while publisher.sent != ["c"]:
                await asyncio.sleep(0.01)
        assert await store.unpublished(0, 10) == []
    finally:
        await relay.stop()
        await asyncio.wait_for(loop, 5)
