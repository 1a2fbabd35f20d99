"""A conversation's swipes, folded from its log stream (pure).

No read model keeps the alternatives of a message (only the current one is history, docs/branches.md), so the
timeline reads them where they are: ``message.alternative_recorded`` (a new alternative, current at once),
``message.edited`` with an ``alternative_id`` (a selection), ``message.edited`` without one (an edit of the
current alternative's text) and ``message.alternative_deleted``. The original text is the slot's own
``message.recorded``. Only messages that ever had an alternative are returned.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    MESSAGE_ALTERNATIVE_DELETED,
    MESSAGE_ALTERNATIVE_RECORDED,
    MESSAGE_EDITED,
    MESSAGE_RECORDED,
)
from mnemo_client.wire.conversation_contract import Alternative


@dataclass
class _Slot:
    alternatives: dict[str, Alternative] = field(default_factory=dict)  # id -> alternative, in recorded order
    current: str = ""
    swiped: bool = False

    def select(self, alternative_id: str) -> None:
        self.current = alternative_id
        for aid, alt in self.alternatives.items():
            self.alternatives[aid] = alt.model_copy(update={"current": aid == alternative_id})

    def edit(self, alternative_id: str | None, content: str) -> None:
        """A selection (``alternative_id`` set) or an edit of the current alternative's text."""
        if alternative_id is not None and alternative_id in self.alternatives:
            self.select(alternative_id)
        elif self.current in self.alternatives:
            self.alternatives[self.current] = self.alternatives[self.current].model_copy(update={"content": content})

    def drop(self, alternative_id: str) -> None:
        if alternative_id in self.alternatives:
            self.alternatives[alternative_id] = self.alternatives[alternative_id].model_copy(update={"deleted": True})


def fold_swipes(events: Iterable[EventEnvelope]) -> dict[str, list[Alternative]]:
    """Message id (the slot) -> its alternatives, the original first, for every message that had a swipe."""
    slots: dict[str, _Slot] = {}
    for env in events:
        if env.type == MESSAGE_RECORDED.name:
            msg = MESSAGE_RECORDED.parse(env.payload)
            original = Alternative(
                message_id=msg.message_id, content=msg.content, created_at=msg.created_at, current=True
            )
            slots[msg.message_id] = _Slot({msg.message_id: original}, msg.message_id)
        elif env.type == MESSAGE_ALTERNATIVE_RECORDED.name:
            alt = MESSAGE_ALTERNATIVE_RECORDED.parse(env.payload)
            slot = slots.setdefault(alt.swipe_of, _Slot())
            slot.alternatives[alt.message_id] = Alternative(
                message_id=alt.message_id, content=alt.content, created_at=alt.created_at, current=False
            )
            slot.swiped = True
            slot.select(alt.message_id)
        elif env.type == MESSAGE_EDITED.name:
            edit = MESSAGE_EDITED.parse(env.payload)
            if (edited := slots.get(edit.message_id)) is not None:
                edited.edit(edit.alternative_id, edit.content)
        elif env.type == MESSAGE_ALTERNATIVE_DELETED.name:
            gone = MESSAGE_ALTERNATIVE_DELETED.parse(env.payload)
            if (holder := slots.get(gone.swipe_of)) is not None:
                holder.drop(gone.message_id)
    return {mid: list(slot.alternatives.values()) for mid, slot in slots.items() if slot.swiped}
