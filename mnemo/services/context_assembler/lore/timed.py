"""World Info timed effects per conversation: loaded before the lore scan, recorded in the log after it.

SillyTavern keeps sticky and cooldown records in the chat's metadata (spec §3.9); mnemo keeps them in the log,
in the conversation's own ``lore_timed/<tenant>/<user>/<conversation>`` stream, as
``lore.timed_state_recorded`` events, so the state at any time can be rebuilt (``mnemo replay``). The
context-assembler is the one writer: a scan that changed the state appends one event at the version it
loaded (optimistic concurrency), projects it at once so the next request of the conversation sees it, and
publishes it. Two requests of one conversation racing (a double click) both scan the same state; the second
append conflicts and is dropped with a log line: the first one's state stands, as in a chat where the
second generation was never made. A failure here never fails the reply: the context is already built.

A fork (docs/branches.md) with no state of its own starts from its parent's as it was at the fork point: the
parent's last state recorded at a chat of at most ``from_index + 1`` messages (up the chain of forks), read
from the log; what the parent recorded later never reaches it. Its own first scan records it in its own stream.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from mnemo.services.context_assembler.gather.cache import LogCache, cached, tenant_topic
from mnemo.services.context_assembler.lore.engine.timed import TimedState
from mnemo.shared.aggregates import lore_timed
from mnemo.shared.eventlog.port import EventStore
from mnemo.shared.eventlog.save import EventSaver
from mnemo.shared.events.envelope import EventEnvelope, utcnow
from mnemo.shared.events.recorded import (
    CONVERSATION_FORKED,
    LORE_TIMED_STATE_RECORDED,
    ConversationForkRecorded,
    LoreTimedStateRecorded,
    conversation_stream,
    lore_timed_stream,
)
from mnemo.shared.readmodels.lore_timed import TimedPort
from mnemo_client.wire.contract import ContextAssembleRequest

log = logging.getLogger(__name__)
MAX_FORK_DEPTH = 32  # forks of forks followed up to the state's origin; deeper chains start empty
HEADS_MEMORY = 65_536  # conversations whose first event is remembered (then the memory starts again)


@dataclass(frozen=True)
class TimedView:
    """The timed effects a scan starts from, and the stream version they were loaded at."""

    state: TimedState
    version: int  # the stream version this state is at (0: nothing recorded yet)
    message_count: int


EMPTY = TimedView(TimedState(), 0, 0)


def _view(last: LoreTimedStateRecorded) -> TimedView:
    """A state read from the log to start a scan from, never saved over (version 0)."""
    return TimedView(
        TimedState.model_validate({"sticky": last.sticky, "cooldown": last.cooldown}), 0, last.message_count
    )


class TimedStates:
    def __init__(self, store: EventStore, model: TimedPort, saver: EventSaver, cache: LogCache | None = None) -> None:
        """``cache``: each conversation's state is kept until its stream records a new one (this replica's
        saves drop it at once, other replicas' through the relayed event)."""
        self.cache = cache
        self._store = store
        self._model = model
        self._saver = saver
        self._heads: dict[str, ConversationForkRecorded | None] = {}  # conversation stream -> its fork event, if any

    async def load(self, req: ContextAssembleRequest) -> TimedView:
        t, u, c = req.tenant_id, req.user_id, req.conversation_id
        stored = await cached(
            self.cache,
            ("timed", t, u, c),
            (lore_timed_stream(t, u, c), tenant_topic(t)),
            lambda: self._model.state(t, u, c),
        )
        if stored.version > 0:
            state = TimedState.model_validate({"sticky": stored.sticky, "cooldown": stored.cooldown})
            return TimedView(state, stored.version, stored.message_count)
        return await self._inherited(t, u, c) or EMPTY

    async def before_turn(self, req: ContextAssembleRequest, message_count: int) -> TimedView:
        """The state a scan at a chat of ``message_count`` messages started from (a context as of an earlier
        message): the last one recorded at a shorter chat, read from the conversation's own stream (a fork's
        from its parent's at the fork point when it had recorded none by then). Never saved over: version 0."""
        t, u, c = req.tenant_id, req.user_id, req.conversation_id
        recorded = [
            LORE_TIMED_STATE_RECORDED.parse(e.payload)
            for e in await self._store.read_stream(lore_timed_stream(t, u, c))
        ]
        last = lore_timed.state_at(recorded, message_count - 1)
        if last is not None:
            return _view(last)
        return await self._inherited(t, u, c) or EMPTY

    async def _inherited(self, tenant_id: str, user_id: str, conversation_id: str) -> TimedView | None:
        """The parent's state at the fork point, for a fork (None: not a fork, or nothing recorded by then)."""
        count: int | None = None
        for _ in range(MAX_FORK_DEPTH):
            fork = await self._fork_of(conversation_stream(tenant_id, user_id, conversation_id))
            if fork is None:
                return None
            count = fork.from_index + 1 if count is None else min(count, fork.from_index + 1)
            conversation_id = fork.parent_conversation_id
            recorded = [
                LORE_TIMED_STATE_RECORDED.parse(e.payload)
                for e in await self._store.read_stream(lore_timed_stream(tenant_id, user_id, conversation_id))
            ]
            last = lore_timed.state_at(recorded, count)
            if last is not None:
                return _view(last)  # version 0: the fork's own stream is empty
        return None

    async def _fork_of(self, stream: str) -> ConversationForkRecorded | None:
        """The conversation's ``conversation.forked`` first event, or None: a stream's first event never
        changes, so it is read once per conversation (and a conversation with no event yet is read again)."""
        if stream in self._heads:
            return self._heads[stream]
        head = await self._store.read_stream(stream, limit=1)
        if not head:
            return None
        fork = CONVERSATION_FORKED.parse(head[0].payload) if head[0].type == CONVERSATION_FORKED.name else None
        if len(self._heads) >= HEADS_MEMORY:
            self._heads.clear()
        self._heads[stream] = fork
        return fork

    async def save(self, req: ContextAssembleRequest, before: TimedView, after: TimedState, message_count: int) -> None:
        """Record ``after`` if the scan changed the state loaded as ``before``."""
        t, u, c = req.tenant_id, req.user_id, req.conversation_id
        event = lore_timed.recorded(
            t, u, c, before=before.state, after=after, message_count=message_count, now=utcnow()
        )
        if event is None:
            return
        stream = lore_timed_stream(t, u, c)

        async def project(committed: Sequence[EventEnvelope]) -> None:
            await self._model.apply(committed)
            if self.cache is not None:
                self.cache.changed(stream)

        # One attempt, no retry: the scan that lost the race is dropped (see the module docstring).
        result = await self._saver.save_at(stream, before.version, [event], project=project)
        if result is not None:
            return
        log.info("timed lore state of %s changed meanwhile; this scan's state is dropped", stream)
