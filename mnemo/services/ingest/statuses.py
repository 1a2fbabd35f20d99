"""Message statuses read from the read model while the batch before is still being decided (ingest's prefetch).

A round's first stage began by reading the statuses of its messages (``message_status``: is this message id
recorded, at which index, deleted?) and only then decided. That read waited behind the previous round's writes
in the store (its projection), so it stood in the first stage's chain of round trips: 160-185 ms of a round's
640-870 ms, the rest deciding, encoding and the log insert (``make bench-ingest``, 10,000 messages, 2026-11-28
08:42 UTC, load 1.6-2.3). Each batch's statuses are now read as soon as the batch queues for its round
(``StatusReads.start``), so the round finds them read.

What the read misses, and how it is made up for. A status read at ``t`` holds what the read model held at ``t``.
The recorder's cache holds, per conversation, what this process appended and the read model may not have yet
(``CachedConversation.pending``), and drops an entry once a projection covers it. An entry appended before the
read is used and projected after the read was issued is in neither the read nor the cache. So every projection
hands what it dropped to the reads still open (``pruned``), and the round merges those back (``merge_known``). This
also closes the same gap for the read a round makes itself, which was open for as long as its reads took (a
projection finishing meanwhile: an edit right after its message, refused as unknown).

A read is only used for conversations whose cached state was trusted when it was issued and still is, through
the same cache entry: anything else (the partitions changed hands and the cache was dropped, a failed round
distrusted the state, the entry was evicted) is read again by the round, as before, since another replica may
have appended meanwhile and the read model's state would then be newer than the statuses.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mnemo.services.ingest.cache import CachedConversation, Pending
from mnemo.services.ingest.domain import InboundCommand, stream_of
from mnemo.shared.aggregates.conversation import KnownMessage
from mnemo.shared.readmodels import MessageKey
from mnemo.shared.readmodels.messages import MessageStatus
from mnemo.shared.readmodels.ports import ConversationReadModel
from mnemo.shared.tasks import retrieve_outcome
from mnemo_client.wire.contract import BotUpserted, ConversationForked, PersonaUpserted

#: Open reads kept at most (one per batch in flight: ``pipeline_depth`` for each of 16 partitions by default); past
#: it the oldest is no longer used (its round reads again), so reads whose rounds never came cannot pile up.
MAX_OPEN = 256


@dataclass(eq=False)
class StatusRead:
    """One read of message statuses: of ``keys`` (key -> conversation stream), issued while the conversations in
    ``trusted`` had those cache entries, with a trusted state."""

    keys: dict[MessageKey, str]
    trusted: dict[str, CachedConversation]
    task: asyncio.Task[dict[MessageKey, MessageStatus]]
    streams: frozenset[str] = frozenset()  # the conversations of ``keys``
    pruned: dict[str, Pending] = field(default_factory=dict)  # per stream: dropped by projections since issued
    stale: bool = False  # the cache was dropped (or too many reads were open) after it was issued

    def usable_for(self, stream_id: str, entry: CachedConversation) -> bool:
        """Whether its statuses of ``stream_id`` may stand for a read made now (see the module)."""
        return not self.stale and self.trusted.get(stream_id) is entry and entry.state is not None

    async def result(self) -> dict[MessageKey, MessageStatus] | None:
        """The statuses read; None if the read failed (the round reads them again)."""
        try:
            return await asyncio.shield(self.task)
        except Exception:
            return None


class StatusReads:
    """The reads still open, so that projections can hand them what they drop from the cache."""

    def __init__(self, read_models: ConversationReadModel) -> None:
        self._read_models = read_models
        self._open: list[StatusRead] = []

    def start(self, keys: Mapping[MessageKey, str], trusted: Mapping[str, CachedConversation]) -> StatusRead:
        """Issue the read of ``keys`` (a task); open from now on, before it is sent, so nothing dropped is lost."""
        task = asyncio.ensure_future(self._read_models.message_status(list(keys)))
        task.add_done_callback(retrieve_outcome)  # a read nobody takes (its round failed) must not warn when collected
        read = StatusRead(dict(keys), dict(trusted), task, frozenset(keys.values()))
        self._open.append(read)
        while len(self._open) > MAX_OPEN:
            self._close(self._open[0])
        return read

    async def read(
        self,
        keys: dict[MessageKey, str],
        entries: Mapping[str, CachedConversation],
        prefetched: Sequence[StatusRead],
        used: list[StatusRead],
    ) -> dict[MessageKey, MessageStatus]:
        """The statuses of ``keys`` (of conversations whose cache entries are ``entries``): from the reads begun
        ahead where they may stand for a read made now, the rest read now. Every read they came from is added to
        ``used``, still open: the caller merges their ``pruned`` (``merge_known``), then closes them (``done``)."""
        covered: dict[MessageKey, StatusRead] = {}
        for ahead in prefetched:
            for key, sid in ahead.keys.items():
                if key in keys and key not in covered and ahead.usable_for(sid, entries[sid]):
                    covered[key] = ahead
        statuses: dict[MessageKey, MessageStatus] = {}
        now = self._start_of({key: sid for key, sid in keys.items() if key not in covered}, entries, used)
        for ahead in dict.fromkeys(covered.values()):  # (the rest was sent first: it is read meanwhile)
            found = await ahead.result()
            mine = [key for key, r in covered.items() if r is ahead]
            if found is None:  # that read failed: its keys are read again
                again = self._start_of({key: keys[key] for key in mine}, entries, used)
                statuses.update(await again.task if again is not None else {})
                continue
            used.append(ahead)
            statuses.update({key: found[key] for key in mine if key in found})
        if now is not None:
            statuses.update(await now.task)
        return statuses

    def _start_of(
        self, keys: dict[MessageKey, str], entries: Mapping[str, CachedConversation], used: list[StatusRead]
    ) -> StatusRead | None:
        if not keys:
            return None
        read = self.start(keys, {sid: entries[sid] for sid in set(keys.values())})
        used.append(read)
        return read

    def pruned(self, stream_id: str, dropped: Pending) -> None:
        """A projection dropped ``dropped`` from ``stream_id``'s cache entry: each open read keeps them."""
        if dropped:
            for read in self._open:
                if stream_id in read.streams:
                    read.pruned.setdefault(stream_id, {}).update(dropped)

    def forget(self) -> None:
        """The cache was dropped: no open read may stand for a read made later."""
        for read in list(self._open):
            self._close(read)

    def done(self, reads: Iterable[StatusRead]) -> None:
        """``reads`` were merged, or their round failed: nothing more is handed to them."""
        for read in reads:
            if read in self._open:
                self._open.remove(read)

    def _close(self, read: StatusRead) -> None:
        read.stale = True  # not cancelled: a round may be awaiting it (it then reads again)
        self._open.remove(read)


def message_keys(commands: Sequence[InboundCommand]) -> dict[MessageKey, str]:
    """The message each command of a conversation names (forks name none), and its stream."""
    return {
        MessageKey(cmd.tenant_id, cmd.user_id, cmd.conversation_id, cmd.message_id): stream_of(cmd)
        for cmd in commands
        if not isinstance(cmd, BotUpserted | PersonaUpserted | ConversationForked)
    }


def merge_known(known: dict[str, KnownMessage], layers: Iterable[Pending]) -> None:
    """Fold ``layers`` (oldest first: what projections dropped since the reads, then the cache's pending statuses)
    over ``known`` (the statuses read): a later status replaces an earlier one, but a deletion sticks and a
    deletion whose index its layer did not know keeps the index known before."""
    for layer in layers:
        for message_id, (status, _) in layer.items():
            stored = known.get(message_id)
            if stored is not None and status.index < 0:
                status = KnownMessage(stored.index, deleted=True)
            elif stored is not None and stored.deleted:
                status = KnownMessage(status.index, deleted=True)
            known[message_id] = status
