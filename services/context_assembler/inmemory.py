"""The ``lore_timed`` read model in memory (port: ``timed_readmodel.TimedPort``), for component tests without a
server; like ``LoreTimedReadModel`` it keeps per conversation the state of the newest stream version only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from services.context_assembler.activation.timed import TimedState
from services.context_assembler.timed_readmodel import EMPTY, TimedPort, TimedView
from shared.events.envelope import EventEnvelope
from shared.events.recorded import LORE_TIMED_STATE_RECORDED, LoreTimedStateRecorded, lore_timed_stream


class InMemoryLoreTimed:
    def __init__(self) -> None:
        self.views: dict[str, tuple[str, TimedView]] = {}  # stream id -> (tenant, view)

    async def apply(self, events: Sequence[EventEnvelope]) -> None:
        for env in events:
            if env.type != LORE_TIMED_STATE_RECORDED.name:
                continue
            p = LoreTimedStateRecorded.model_validate(env.payload)
            stream = lore_timed_stream(env.tenant_id, p.user_id, p.conversation_id)
            stored = self.views.get(stream)
            if stored is None or stored[1].version < env.version:
                state = TimedState.model_validate({"sticky": p.sticky, "cooldown": p.cooldown})
                self.views[stream] = (env.tenant_id, TimedView(state, env.version, p.message_count))

    async def state(self, tenant_id: str, user_id: str, conversation_id: str) -> TimedView:
        stored = self.views.get(lore_timed_stream(tenant_id, user_id, conversation_id))
        if stored is None or stored[0] != tenant_id:
            return EMPTY
        return stored[1]


if TYPE_CHECKING:
    _port: TimedPort = InMemoryLoreTimed()
