"""The conversation aggregate's deciders: which events a platform command on one conversation becomes (pure,
no I/O; ingest calls them on the state, statuses and timeline it folded).

Idempotency key: every event id is derived from the platform's own ids (``deterministic_id``), so the same
platform fact always yields the same event id and the log stores it once however often it is delivered:

- ``message.recorded``: (tenant, user, conversation, message_id, "created");
- ``message.edited``: (..., message_id, "edited", edit_id or a hash of the new content and ``edited_at``);
- ``message.deleted``: (..., message_id, "deleted").

Beyond the log's dedupe, the decider also skips facts it can see are already recorded (a message id it
knows, a message already deleted), so a redelivery appends nothing and takes no index. Edits and deletes of
a message the conversation never recorded (or an edit of a deleted one) are refused with a reason; the
consumer dead-letters them, where an operator can see and replay them. Swipes and forks: ``branches``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mnemo.shared.aggregates.conversation import branches
from mnemo.shared.aggregates.conversation.known import KnownMessage
from mnemo.shared.aggregates.conversation.state import ConversationState, as_utc
from mnemo.shared.aggregates.conversation.timeline import Timeline
from mnemo.shared.aggregates.decision import Decision, digest
from mnemo.shared.events.envelope import deterministic_id
from mnemo.shared.events.recorded import (
    MESSAGE_DELETED,
    MESSAGE_RECORDED,
    MessageDeletionRecorded,
    MessageEditRecorded,
    MessageRecorded,
    conversation_stream,
    created_event_id,
    new_event,
)
from mnemo.shared.mapping import mapped
from mnemo.shared.tokens import estimate_tokens
from mnemo_client.wire.contract import (
    ConversationForked,
    MessageCreated,
    MessageDeleted,
    MessageEdited,
    MessageSwipeSelected,
)

MessageCommand = MessageCreated | MessageEdited | MessageDeleted | MessageSwipeSelected | ConversationForked


def edited_event_id(cmd: MessageEdited) -> str:
    edit_key = cmd.edit_id or digest(cmd.content, as_utc(cmd.edited_at).isoformat())
    return deterministic_id(cmd.tenant_id, cmd.user_id, cmd.conversation_id, cmd.message_id, "edited", edit_key)


def deleted_event_id(cmd: MessageDeleted) -> str:
    return deterministic_id(cmd.tenant_id, cmd.user_id, cmd.conversation_id, cmd.message_id, "deleted")


def needs_timeline(cmd: object) -> bool:
    """Whether deciding ``cmd`` needs the conversation's ``Timeline`` (alternatives, a fork's own stream)."""
    if isinstance(cmd, MessageCreated):
        return cmd.swipe_of is not None
    return isinstance(cmd, MessageEdited | MessageDeleted | MessageSwipeSelected | ConversationForked)


@dataclass(frozen=True)
class Branches:
    """What swipes and forks are decided on: the conversation's timeline and forked parents' timelines (by
    stream id, which starts with the tenant and the user)."""

    timeline: Timeline
    parents: Mapping[str, Timeline]


class ConversationDecider:
    """Decides a run of commands for one conversation in order, remembering what the run itself recorded."""

    def __init__(
        self, state: ConversationState, known: Mapping[str, KnownMessage], branch: Branches | None = None
    ) -> None:
        self.state = state
        self.next_index = state.message_count
        self.known = dict(known)
        self.timeline = branch.timeline.copy() if branch is not None else None
        self.parents = branch.parents if branch is not None else {}

    def decide(self, cmd: MessageCommand) -> Decision:
        if (decision := self._branching(cmd)) is not None:
            return decision
        if isinstance(cmd, MessageCreated):
            decision = self._created(cmd)
        elif isinstance(cmd, MessageEdited):
            decision = self._edited(cmd)
        else:
            assert isinstance(cmd, MessageDeleted)
            decision = self._deleted(cmd)
        if self.timeline is not None:  # keep it in step with what this run decides
            for event in decision.events:
                self.timeline.apply(event.type, event.payload)
        return decision

    def _branching(self, cmd: MessageCommand) -> Decision | None:
        """The decision of a swipe or fork command (None: decided as an ordinary message command)."""
        tl = self.timeline
        if tl is None:
            if isinstance(cmd, MessageSwipeSelected | ConversationForked) or (
                isinstance(cmd, MessageCreated) and cmd.swipe_of is not None
            ):
                raise ValueError("a swipe or fork command needs the conversation's timeline")
            return None
        outcome: branches.Outcome | None = None
        if isinstance(cmd, MessageSwipeSelected):
            outcome = branches.swipe_selected(tl, cmd)
        elif isinstance(cmd, ConversationForked):
            parent = self.parents.get(conversation_stream(cmd.tenant_id, cmd.user_id, cmd.parent_conversation_id))
            outcome = branches.forked(tl, self.state, parent, cmd)
        elif isinstance(cmd, MessageCreated) and cmd.swipe_of is not None:
            outcome = branches.swipe_created(tl, cmd) if cmd.message_id not in self.known else branches.NOTHING
        elif isinstance(cmd, MessageCreated) and (cmd.message_id in tl.slot_of or cmd.message_id in tl.gone):
            outcome = branches.NOTHING  # an alternative re-published without its swipe_of
        elif isinstance(cmd, MessageEdited):
            outcome = branches.alternative_edited(tl, cmd)
        elif isinstance(cmd, MessageDeleted):
            outcome = branches.alternative_deleted(tl, cmd)
        if outcome is None:
            return None
        events, rejection = outcome
        for event in events:
            if event.type == MESSAGE_DELETED.name:
                mid = str(event.payload["message_id"])
                self.known[mid] = KnownMessage(self.known[mid].index if mid in self.known else -1, deleted=True)
            elif event.type == MESSAGE_RECORDED.name:
                index = int(event.payload["index"])
                self.known[str(event.payload["message_id"])] = KnownMessage(index, deleted=False)
                self.next_index = max(self.next_index, index + 1)
        return Decision(events, rejection)

    def _created(self, cmd: MessageCreated) -> Decision:
        if cmd.message_id in self.known:
            return Decision()  # already recorded: a redelivery or a re-publish
        payload = MessageRecorded(
            user_id=cmd.user_id,
            conversation_id=cmd.conversation_id,
            message_id=cmd.message_id,
            role=cmd.role,
            author_id=cmd.author_id,
            author_name=cmd.author_name,
            content=cmd.content,
            created_at=cmd.created_at,
            bot_ids=list(dict.fromkeys(cmd.bot_ids)),
            persona_id=cmd.persona_id,
            index=self.next_index,
            tokens=estimate_tokens(cmd.content),
        )
        self.known[cmd.message_id] = KnownMessage(self.next_index, deleted=False)
        self.next_index += 1
        event_id = created_event_id(cmd.tenant_id, cmd.user_id, cmd.conversation_id, cmd.message_id)
        return Decision((new_event(payload, tenant_id=cmd.tenant_id, event_id=event_id, occurred_at=cmd.created_at),))

    def _refusal(self, cmd: MessageEdited | MessageDeleted, verb: str) -> Decision | None:
        known = self.known.get(cmd.message_id)
        if known is None:
            return Decision(rejection=f"cannot {verb} message {cmd.message_id!r}: not recorded in this conversation")
        if known.deleted and verb == "edit":
            return Decision(rejection=f"cannot edit message {cmd.message_id!r}: it was deleted")
        return None

    def _edited(self, cmd: MessageEdited) -> Decision:
        if (refusal := self._refusal(cmd, "edit")) is not None:
            return refusal
        payload = mapped(MessageEditRecorded, cmd, tokens=estimate_tokens(cmd.content))
        event = new_event(payload, tenant_id=cmd.tenant_id, event_id=edited_event_id(cmd), occurred_at=cmd.edited_at)
        return Decision((event,))

    def _deleted(self, cmd: MessageDeleted) -> Decision:
        if (refusal := self._refusal(cmd, "delete")) is not None:
            return refusal
        known = self.known[cmd.message_id]
        if known.deleted:
            return Decision()  # already deleted
        self.known[cmd.message_id] = KnownMessage(known.index, deleted=True)
        payload = mapped(MessageDeletionRecorded, cmd)
        event = new_event(payload, tenant_id=cmd.tenant_id, event_id=deleted_event_id(cmd), occurred_at=cmd.deleted_at)
        return Decision((event,))
