"""The conversation aggregate's deciders for swipes and forks (pure, no I/O), on its ``Timeline`` (ingest calls them).

Swipes reuse the edit machinery: an alternative is recorded apart (``message.alternative_recorded``, which no
read model projects), and making it current is a ``message.edited`` of its slot carrying the alternative's
text and ``alternative_id``. Every consumer already turns an edit into "retire what the old text produced,
derive from the new one" (vectors, covering summaries, facts, lore scans), so a selection does the same.
A new alternative becomes current at once (what a platform shows after a regeneration).

A fork is copy-on-fork: its stream starts with ``conversation.forked``, then a ``message.recorded`` copy of
each live parent message up to the fork point (same ids and indexes, the current alternative's text); every
consumer then derives the fork's own summaries, facts and vectors from its own stream (docs/branches.md).

Event ids are deterministic from the platform's ids (a selection also from ``selected_at``), so redeliveries
record nothing twice; what the timeline shows as already done is skipped without taking a log version.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from mnemo.shared.aggregates.conversation.state import ConversationState, as_utc
from mnemo.shared.aggregates.conversation.timeline import Timeline
from mnemo.shared.events.envelope import NewEvent, deterministic_id
from mnemo.shared.events.recorded import (
    ConversationForkRecorded,
    MessageAlternativeDeleted,
    MessageAlternativeRecorded,
    MessageDeletionRecorded,
    MessageEditRecorded,
    MessageRecorded,
    RecordedPayload,
    created_event_id,
    new_event,
)
from mnemo.shared.tokens import estimate_tokens
from mnemo_client.wire.contract import ConversationForked, MessageCreated, MessageDeleted, MessageEdited
from mnemo_client.wire.contract import MessageSwipeSelected as SwipeSelected

# (events, rejection): what one command became; the caller wraps it in its ``Decision``.
Outcome = tuple[tuple[NewEvent, ...], str | None]
NOTHING: Outcome = ((), None)


def _refused(reason: str) -> Outcome:
    return (), reason


def _event(tl: Timeline, tenant_id: str, event_id: str, payload: RecordedPayload, at: datetime) -> NewEvent:
    """The event ``payload`` is (``new_event``: its class names its type), folded into ``tl`` at once, so that
    the next command of the batch is decided on it before it commits."""
    event = new_event(payload, tenant_id=tenant_id, event_id=event_id, occurred_at=at)
    tl.apply(event.type, event.payload)
    return event


def _select(tl: Timeline, cmd: MessageCreated | SwipeSelected, slot_id: str, alternative: str, key: str) -> NewEvent:
    text = tl.slots[slot_id].texts[alternative]
    at = cmd.created_at if isinstance(cmd, MessageCreated) else cmd.selected_at
    payload = MessageEditRecorded(
        user_id=cmd.user_id,
        conversation_id=cmd.conversation_id,
        message_id=slot_id,
        content=text,
        edited_at=at,
        tokens=estimate_tokens(text),
        alternative_id=alternative,
    )
    eid = deterministic_id(cmd.tenant_id, cmd.user_id, cmd.conversation_id, slot_id, "swipe", alternative, key)
    return _event(tl, cmd.tenant_id, eid, payload, at)


def swipe_created(tl: Timeline, cmd: MessageCreated) -> Outcome:
    """A new alternative of ``cmd.swipe_of``: recorded apart, then selected."""
    assert cmd.swipe_of is not None
    if cmd.message_id in tl.slot_of or cmd.message_id in tl.gone:
        return NOTHING  # a redelivery
    slot = tl.slot(cmd.swipe_of)
    if slot is None or slot.deleted:
        state = "was deleted" if slot is not None else "is not recorded in this conversation"
        return _refused(f"cannot add swipe {cmd.message_id!r}: message {cmd.swipe_of!r} {state}")
    slot_id = tl.slot_of[cmd.swipe_of]
    if cmd.role != slot.recorded["role"]:
        return _refused(f"swipe {cmd.message_id!r} has role {cmd.role!r}, its message {slot.recorded['role']!r}")
    payload = MessageAlternativeRecorded(
        user_id=cmd.user_id,
        conversation_id=cmd.conversation_id,
        message_id=cmd.message_id,
        swipe_of=slot_id,
        content=cmd.content,
        created_at=cmd.created_at,
        tokens=estimate_tokens(cmd.content),
    )
    eid = created_event_id(cmd.tenant_id, cmd.user_id, cmd.conversation_id, cmd.message_id)
    recorded = _event(tl, cmd.tenant_id, eid, payload, cmd.created_at)
    return (recorded, _select(tl, cmd, slot_id, cmd.message_id, "created")), None


def swipe_selected(tl: Timeline, cmd: SwipeSelected) -> Outcome:
    if cmd.message_id in tl.gone:
        return _refused(f"cannot select message {cmd.message_id!r}: it was deleted")
    slot = tl.slot(cmd.message_id)
    if slot is None:
        return _refused(f"cannot select message {cmd.message_id!r}: not recorded in this conversation")
    if slot.deleted:
        return _refused(f"cannot select message {cmd.message_id!r}: its message was deleted")
    if slot.current == cmd.message_id:
        return NOTHING  # already current (a redelivery, or a no-op swipe)
    return (_select(tl, cmd, tl.slot_of[cmd.message_id], cmd.message_id, as_utc(cmd.selected_at).isoformat()),), None


def alternative_edited(tl: Timeline, cmd: MessageEdited) -> Outcome | None:
    """An edit that concerns alternatives (None: an ordinary edit, decided as before)."""
    if cmd.message_id in tl.gone:
        return _refused(f"cannot edit message {cmd.message_id!r}: it was deleted")
    slot = tl.slot(cmd.message_id)
    if slot is None or slot.deleted or slot.current == cmd.message_id == tl.slot_of[cmd.message_id]:
        return None  # the message's own text is shown: an ordinary edit or delete
    if slot.current != cmd.message_id:
        return _refused(
            f"cannot edit message {cmd.message_id!r}: it is not the current alternative ({slot.current!r}); "
            "select it first"
        )
    payload = MessageEditRecorded(
        user_id=cmd.user_id,
        conversation_id=cmd.conversation_id,
        message_id=tl.slot_of[cmd.message_id],
        content=cmd.content,
        edited_at=cmd.edited_at,
        tokens=estimate_tokens(cmd.content),
        alternative_id=cmd.message_id,
    )
    key = cmd.edit_id or hashlib.sha256(f"{cmd.content}\x1f{as_utc(cmd.edited_at).isoformat()}".encode()).hexdigest()
    eid = deterministic_id(cmd.tenant_id, cmd.user_id, cmd.conversation_id, cmd.message_id, "edited", key)
    return (_event(tl, cmd.tenant_id, eid, payload, cmd.edited_at),), None


def alternative_deleted(tl: Timeline, cmd: MessageDeleted) -> Outcome | None:
    """A delete that concerns alternatives (None: an ordinary delete, decided as before)."""
    if cmd.message_id in tl.gone:
        return NOTHING
    slot = tl.slot(cmd.message_id)
    if slot is None or slot.deleted or slot.current == cmd.message_id == tl.slot_of[cmd.message_id]:
        return None  # the message's own text is shown: an ordinary edit or delete
    slot_id = tl.slot_of[cmd.message_id]
    eid = deterministic_id(cmd.tenant_id, cmd.user_id, cmd.conversation_id, cmd.message_id, "deleted")
    if slot.current == cmd.message_id:  # the shown alternative: the message leaves the history
        gone = MessageDeletionRecorded(
            user_id=cmd.user_id, conversation_id=cmd.conversation_id, message_id=slot_id, deleted_at=cmd.deleted_at
        )
        return (_event(tl, cmd.tenant_id, eid, gone, cmd.deleted_at),), None
    payload = MessageAlternativeDeleted(
        user_id=cmd.user_id,
        conversation_id=cmd.conversation_id,
        message_id=cmd.message_id,
        swipe_of=slot_id,
        deleted_at=cmd.deleted_at,
    )
    return (_event(tl, cmd.tenant_id, eid, payload, cmd.deleted_at),), None


def forked(own: Timeline, state: ConversationState, parent: Timeline | None, cmd: ConversationForked) -> Outcome:
    """The fork's stream: ``conversation.forked``, then copies of the parent's live messages up to the point."""
    if own.forked_from is not None:
        return NOTHING if own.forked_from == cmd.parent_conversation_id else _refused("already forked elsewhere")
    if state.version > 0:
        return _refused(f"cannot fork into conversation {cmd.conversation_id!r}: it already has events")
    if cmd.parent_conversation_id == cmd.conversation_id:
        return _refused("a conversation cannot be forked into itself")
    slot = parent.slot(cmd.from_message_id) if parent is not None else None
    if parent is None or slot is None or slot.deleted:
        return _refused(
            f"cannot fork from message {cmd.from_message_id!r}: not recorded (or deleted) in "
            f"conversation {cmd.parent_conversation_id!r}"
        )
    if slot.current != cmd.from_message_id:
        return _refused(f"cannot fork from {cmd.from_message_id!r}: it is not the current alternative")
    head = ConversationForkRecorded(
        user_id=cmd.user_id,
        conversation_id=cmd.conversation_id,
        parent_conversation_id=cmd.parent_conversation_id,
        from_message_id=cmd.from_message_id,
        from_index=slot.index,
        root_conversation_id=parent.root or cmd.parent_conversation_id,
        forked_at=cmd.forked_at,
    )
    fork_id = deterministic_id(cmd.tenant_id, cmd.user_id, cmd.conversation_id, "forked")
    events = [_event(own, cmd.tenant_id, fork_id, head, cmd.forked_at)]
    for message_id, line in parent.history(slot.index):
        text = line.texts[line.current]
        copy = MessageRecorded.model_validate(
            {**line.recorded, "conversation_id": cmd.conversation_id, "content": text, "tokens": estimate_tokens(text)}
        )
        eid = created_event_id(cmd.tenant_id, cmd.user_id, cmd.conversation_id, message_id)
        events.append(_event(own, cmd.tenant_id, eid, copy, copy.created_at))
    return tuple(events), None
