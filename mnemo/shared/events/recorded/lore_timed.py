"""``lore_timed/<tenant>/<user>/<conversation>``: the World Info timed effects of a conversation."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from mnemo.shared.events.envelope import stream_id
from mnemo.shared.events.recorded.base import REGISTRY, RecordedPayload


def lore_timed_stream(tenant_id: str, user_id: str, conversation_id: str) -> str:
    return stream_id("lore_timed", tenant_id, user_id, conversation_id)


class LoreTimedStateRecorded(RecordedPayload):
    """The conversation's World Info timed effects after a context was assembled (spec §3.9): the sticky and
    cooldown records (``mnemo.services.context_assembler.lore.engine.timed.TimedState`` dumped; entry idents and hashes, no user text) as of a
    chat of ``message_count`` messages. Written by the context-assembler only when a scan changed them."""

    user_id: str
    conversation_id: str
    message_count: int = Field(..., ge=0)
    sticky: dict[str, dict[str, object]]
    cooldown: dict[str, dict[str, object]]
    recorded_at: datetime


LORE_TIMED_STATE_RECORDED = REGISTRY.register("lore.timed_state_recorded", LoreTimedStateRecorded, key_owner="user_id")
