"""The lore timed-state aggregate: a conversation's World Info timed effects
(``lore_timed/<tenant>/<user>/<conversation>``, spec §3.9), pure, the clock passed in. The context-assembler is
its one writer: after a lore scan it records the sticky and cooldown records when the scan changed them
(``recorded``), and a scan starts from the state as of its chat's length (``state_at``, also a fork's start from
its parent's at the fork point). The records themselves (``TimedState``) are the lore engine's, in the
context-assembler; the log keeps them dumped. ``EVENTS`` names the stream's payload classes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Protocol

from pydantic import BaseModel

from mnemo.shared.events.envelope import NewEvent
from mnemo.shared.events.recorded import LoreTimedStateRecorded, new_event

#: The payload classes of a conversation's timed-state stream.
EVENTS = (LoreTimedStateRecorded,)


class Timed(Protocol):
    """A timed state: its records keyed by ``<book>.<uid>``."""

    @property
    def sticky(self) -> Mapping[str, BaseModel]: ...
    @property
    def cooldown(self) -> Mapping[str, BaseModel]: ...


def state_at(recorded: Iterable[LoreTimedStateRecorded], messages: int) -> LoreTimedStateRecorded | None:
    """The last state of a stream (in its order) recorded at a chat of at most ``messages`` messages."""
    last = None
    for state in recorded:
        if state.message_count <= messages:
            last = state
    return last


def recorded(
    tenant_id: str,
    user_id: str,
    conversation_id: str,
    *,
    before: Timed,
    after: Timed,
    message_count: int,
    now: datetime,
) -> NewEvent | None:
    """``after`` recorded as of a chat of ``message_count`` messages, or None when the scan left ``before`` as it
    was (nothing to record)."""
    if after == before:
        return None
    payload = LoreTimedStateRecorded(
        user_id=user_id,
        conversation_id=conversation_id,
        message_count=message_count,
        sticky={k: v.model_dump() for k, v in after.sticky.items()},
        cooldown={k: v.model_dump() for k, v in after.cooldown.items()},
        recorded_at=now,
    )
    return new_event(payload, tenant_id=tenant_id, occurred_at=now)
