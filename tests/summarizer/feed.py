"""Feeding the summarizer one conversation's log the way the relay would, for its component and integration tests."""

from __future__ import annotations

from mnemo.services.summarizer.handlers import Summarizer
from mnemo.shared.eventlog.port import EventStore
from mnemo.shared.events.envelope import EventEnvelope, NewEvent
from tests.components import items


class Feed:
    """Appends to a conversation's stream and delivers what is new on ``conv``, then on ``sums``, to the summarizer.

    ``store`` is either event store (in memory or MongoDB); ``seen`` is the last version delivered of each stream.
    """

    def __init__(self, store: EventStore, summarizer: Summarizer, conv: str, sums: str) -> None:
        self.store = store
        self.summarizer = summarizer
        self.conv = conv
        self.seen = {conv: 0, sums: 0}
        self.sums = sums

    async def deliver(self, stream: str) -> list[EventEnvelope]:
        new = await self.store.read_stream(stream, after_version=self.seen[stream])
        if new:
            self.seen[stream] = new[-1].version
            assert await self.summarizer.on_batch(items(new)) == []
        return new

    async def append(self, events: list[NewEvent]) -> list[EventEnvelope]:
        """Record ``events`` and deliver them; returns the summary events they caused (delivered too, for the
        read model)."""
        await self.store.append(self.conv, await self.store.stream_version(self.conv), events)
        await self.deliver(self.conv)
        return await self.deliver(self.sums)
