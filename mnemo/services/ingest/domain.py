"""Ingest decisions: which log events an inbound platform command becomes (pure, no I/O).

Idempotency key: every event id is derived from the platform's own ids (``deterministic_id``), so the same
platform fact always yields the same event id and the log stores it once however often it is delivered:

- ``message.recorded``: (tenant, user, conversation, message_id, "created");
- ``message.edited``: (..., message_id, "edited", edit_id or a hash of the new content and ``edited_at``);
- ``message.deleted``: (..., message_id, "deleted");
- ``bot.recorded`` / ``persona.recorded``: the profile's ids and a hash of the upsert's content.

Beyond the log's dedupe, the decider also skips facts it can see are already recorded (a message id it
knows, a message already deleted), so a redelivery appends nothing and takes no index. Edits and deletes of
a message the conversation never recorded (or an edit of a deleted one) are refused with a reason; the
consumer dead-letters them, where an operator can see and replay them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mnemo.services.ingest import branches
from mnemo.shared.aggregates.conversation import ConversationState, KnownMessage, Timeline, as_utc
from mnemo.shared.events.envelope import NewEvent, deterministic_id
from mnemo.shared.events.recorded import (
    MESSAGE_DELETED,
    MESSAGE_RECORDED,
    BotRecorded,
    MessageRecorded,
    PersonaRecorded,
    bot_stream,
    conversation_stream,
    created_event_id,
    new_event,
    persona_stream,
)
from mnemo.shared.events.recorded import MessageDeleted as MessageDeletedPayload
from mnemo.shared.events.recorded import MessageEdited as MessageEditedPayload
from mnemo.shared.mapping import mapped
from mnemo.shared.tokens import estimate_tokens
from mnemo_client.wire.contract import (
    BotUpserted,
    ConversationForked,
    MessageCreated,
    MessageDeleted,
    MessageEdited,
    MessageSwipeSelected,
    PersonaUpserted,
)

MessageCommand = MessageCreated | MessageEdited | MessageDeleted | MessageSwipeSelected | ConversationForked
InboundCommand = MessageCommand | BotUpserted | PersonaUpserted


def stream_of(cmd: InboundCommand) -> str:
    """The log stream a command's events go to (also the unit of ordering and concurrency control)."""
    if isinstance(cmd, BotUpserted):
        return bot_stream(cmd.tenant_id, cmd.bot_id)
    if isinstance(cmd, PersonaUpserted):
        return persona_stream(cmd.tenant_id, cmd.user_id, cmd.persona_id)
    return conversation_stream(cmd.tenant_id, cmd.user_id, cmd.conversation_id)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def edited_event_id(cmd: MessageEdited) -> str:
    edit_key = cmd.edit_id or _digest(cmd.content, as_utc(cmd.edited_at).isoformat())
    return deterministic_id(cmd.tenant_id, cmd.user_id, cmd.conversation_id, cmd.message_id, "edited", edit_key)


def deleted_event_id(cmd: MessageDeleted) -> str:
    return deterministic_id(cmd.tenant_id, cmd.user_id, cmd.conversation_id, cmd.message_id, "deleted")


# Profile fields added after v1 was published: they enter the content key only when given, so an upsert
# recorded before they existed keeps its event id when it is delivered again (nothing new is appended).
LATER_PROFILE_FIELDS = ("gender", "age", "knowledge_sharing", "instructions")


def _content_key(cmd: BotUpserted | PersonaUpserted) -> str:
    data = cmd.model_dump(mode="json")
    for name in LATER_PROFILE_FIELDS:
        if data.get(name) in (None, ""):
            data.pop(name, None)
    return _digest(json.dumps(data, sort_keys=True, ensure_ascii=False))


@dataclass(frozen=True)
class Decision:
    """What one command became: events to append (none for a duplicate) or the reason it is refused."""

    events: tuple[NewEvent, ...] = ()
    rejection: str | None = None


def needs_timeline(cmd: InboundCommand) -> bool:
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
        payload = mapped(MessageEditedPayload, cmd, tokens=estimate_tokens(cmd.content))
        event = new_event(payload, tenant_id=cmd.tenant_id, event_id=edited_event_id(cmd), occurred_at=cmd.edited_at)
        return Decision((event,))

    def _deleted(self, cmd: MessageDeleted) -> Decision:
        if (refusal := self._refusal(cmd, "delete")) is not None:
            return refusal
        known = self.known[cmd.message_id]
        if known.deleted:
            return Decision()  # already deleted
        self.known[cmd.message_id] = KnownMessage(known.index, deleted=True)
        payload = mapped(MessageDeletedPayload, cmd)
        event = new_event(payload, tenant_id=cmd.tenant_id, event_id=deleted_event_id(cmd), occurred_at=cmd.deleted_at)
        return Decision((event,))


def decide_profile(cmd: BotUpserted | PersonaUpserted) -> Decision:
    """A bot or persona upsert is recorded as given; the same upsert delivered twice has the same id."""
    if isinstance(cmd, BotUpserted):
        event_id = deterministic_id(cmd.tenant_id, "bot", cmd.bot_id, "upserted", _content_key(cmd))
        payload: BotRecorded | PersonaRecorded = mapped(BotRecorded, cmd)
    else:
        event_id = deterministic_id(
            cmd.tenant_id, cmd.user_id, "persona", cmd.persona_id, "upserted", _content_key(cmd)
        )
        payload = mapped(PersonaRecorded, cmd)
    return Decision((new_event(payload, tenant_id=cmd.tenant_id, event_id=event_id, occurred_at=cmd.updated_at),))


def decide_stream(
    commands: Sequence[InboundCommand],
    state: ConversationState | None,
    known: Mapping[str, KnownMessage],
    branch: Branches | None = None,
) -> list[Decision]:
    """One decision per command of one stream, in order (``state`` is None for profile streams; ``branch``
    is needed when a command ``needs_timeline``)."""
    decider = ConversationDecider(state, known, branch) if state is not None else None
    decisions: list[Decision] = []
    seen: set[str] = set()
    for cmd in commands:
        if isinstance(cmd, BotUpserted | PersonaUpserted):
            decision = decide_profile(cmd)
        elif decider is None:
            raise ValueError(f"a message command needs its conversation state: {stream_of(cmd)}")
        else:
            decision = decider.decide(cmd)
        fresh = tuple(e for e in decision.events if e.event_id not in seen)  # same fact twice in one batch
        seen.update(e.event_id for e in fresh)
        decisions.append(Decision(fresh, decision.rejection))
    return decisions
