"""The memory service's own pure part: a conversation's swipes as its timeline shows them, from the conversation aggregate's
``Timeline`` (the one fold of a conversation stream's alternatives; no read model keeps them, docs/branches.md).

Every alternative a message ever had is listed in recorded order, the original first, with its latest text,
its ``created_at``, the current one marked and deleted ones flagged. Only messages that ever had an
alternative are returned. The decisions on the streams it writes are their aggregates' (``summaries``: a
memory's edit and delete; ``legacy_lore``: its conversion; ``memories``: the memory API).
"""

from __future__ import annotations

from collections.abc import Iterable

from mnemo.shared.aggregates.conversation import Timeline
from mnemo.shared.events.envelope import EventEnvelope
from mnemo_client.wire.conversation_contract import Alternative


def fold_swipes(events: Iterable[EventEnvelope]) -> dict[str, list[Alternative]]:
    """Message id (the slot) -> its alternatives, the original first, for every message that had a swipe."""
    timeline = Timeline().fold(events)
    return {
        slot_id: [
            Alternative(
                message_id=aid,
                content=slot.texts[aid],
                created_at=created_at,
                current=aid == slot.current,
                deleted=aid in timeline.gone,
            )
            for aid, created_at in slot.made.items()
        ]
        for slot_id, slot in timeline.swiped()
    }
