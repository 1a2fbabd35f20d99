"""The ingest process's memory of conversations beyond (or ahead of) the read model.

Consecutive batches overlap (see ``recorder.py``): the next batch is decided before this one is projected,
so its decisions need the state this process just appended. ``ConversationCache`` is a bounded LRU of
that knowledge; evicting an entry only costs a read-model lookup, and a stale entry (another replica
appended) is caught by the append's optimistic-concurrency check.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from mnemo.shared.aggregates.conversation import KnownMessage, known_from_events
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.readmodels import ConversationState

DEFAULT_CACHE_SIZE = 10_000  # conversations; must exceed the streams of the batches in flight (2 x 1,024)

#: Message id -> (its status, the log version that set it): what this process appended and the read model may lack.
Pending = dict[str, tuple[KnownMessage, int]]


@dataclass
class CachedConversation:
    """What this process knows of one conversation beyond (or ahead of) the read model."""

    state: ConversationState | None = None  # the log's state after our last append; None: ask the read model
    pending: Pending = field(default_factory=dict)
    projected: ConversationState | None = None  # the read model holds at least this; None: ask it

    def remember(self, events: Iterable[EventEnvelope]) -> None:
        """Note the message statuses ``events`` set (until a projection covers their versions)."""
        for env in sorted(events, key=lambda e: e.version):
            for message_id, known in known_from_events([env]).items():
                before = self.pending.get(message_id)
                if known.index < 0 and before is not None:  # a delete of a message recorded earlier
                    known = KnownMessage(before[0].index, deleted=True)
                self.pending[message_id] = (known, env.version)

    def projected_to(self, state: ConversationState) -> Pending:
        """The read model now holds ``state``: raise ``projected``, forget what it covers; what was forgotten."""
        if self.projected is None or state.version > self.projected.version:
            self.projected = state
        dropped = {m: kv for m, kv in self.pending.items() if kv[1] <= state.version}
        if dropped:
            self.pending = {m: kv for m, kv in self.pending.items() if kv[1] > state.version}
        return dropped


class ConversationCache:
    """LRU of ``CachedConversation`` by stream id (evicting one only costs a read-model lookup)."""

    def __init__(self, size: int = DEFAULT_CACHE_SIZE) -> None:
        self._size = size
        self._entries: OrderedDict[str, CachedConversation] = OrderedDict()

    def get(self, stream_id: str) -> CachedConversation | None:
        entry = self._entries.get(stream_id)
        if entry is not None:
            self._entries.move_to_end(stream_id)
        return entry

    def entry(self, stream_id: str) -> CachedConversation:
        entry = self.get(stream_id)
        if entry is None:
            entry = self._entries[stream_id] = CachedConversation()
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return entry

    def __len__(self) -> int:
        return len(self._entries)
