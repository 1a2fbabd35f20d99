"""World Info timed effects per conversation: loaded before the lore scan, recorded in the log after it.

SillyTavern keeps sticky and cooldown records in the chat's metadata (spec §3.9); mnemo keeps them in the log,
in the conversation's own ``lore_timed/<tenant>/<user>/<conversation>`` stream, as
``lore.timed_state_recorded`` events, so the state at any time can be rebuilt (``mnemo replay``). The
context-assembler is the one writer: a scan that changed the state appends one event at the version it
loaded (optimistic concurrency), projects it at once so the next request of the conversation sees it, and
publishes it. Two requests of one conversation racing (a double click) both scan the same state; the second
append conflicts and is dropped with a log line: the first one's state stands, as in a chat where the
second generation was never made. A failure here never fails the reply: the context is already built.
"""

from __future__ import annotations

import logging

from services.context_assembler.activation.timed import TimedState
from services.context_assembler.timed_readmodel import TimedPort, TimedView
from shared.eventlog.append import try_append
from shared.eventlog.port import AppendResult, EventStore
from shared.events.contract import ContextAssembleRequest
from shared.events.envelope import NewEvent, utcnow
from shared.events.recorded import LORE_TIMED_STATE_RECORDED, LoreTimedStateRecorded, lore_timed_stream
from shared.runtime import CommittedPublisher

log = logging.getLogger(__name__)


class TimedStates:
    def __init__(self, store: EventStore, model: TimedPort, publisher: CommittedPublisher | None) -> None:
        self._store = store
        self._model = model
        self._publisher = publisher

    async def load(self, req: ContextAssembleRequest) -> TimedView:
        return await self._model.state(req.tenant_id, req.user_id, req.conversation_id)

    async def save(self, req: ContextAssembleRequest, before: TimedView, after: TimedState, message_count: int) -> None:
        """Record ``after`` if the scan changed the state loaded as ``before``."""
        if after == before.state:
            return
        payload = LoreTimedStateRecorded(
            user_id=req.user_id,
            conversation_id=req.conversation_id,
            message_count=message_count,
            sticky={k: v.model_dump() for k, v in after.sticky.items()},
            cooldown={k: v.model_dump() for k, v in after.cooldown.items()},
            recorded_at=utcnow(),
        )
        event = NewEvent(
            type=LORE_TIMED_STATE_RECORDED.name, tenant_id=req.tenant_id, payload=payload.model_dump(mode="json")
        )
        stream = lore_timed_stream(req.tenant_id, req.user_id, req.conversation_id)

        async def project(result: AppendResult) -> None:
            await self._model.apply(result.committed)

        # One attempt, no retry: the scan that lost the race is dropped (see the module docstring).
        result = await try_append(
            self._store, stream, before.version, [event], publisher=self._publisher, project=project
        )
        if result is not None:
            return
        log.info("timed lore state of %s changed meanwhile; this scan's state is dropped", stream)
