"""A conversation's state, a pure left fold of one ``conversation/<tenant>/<user>/<conversation>`` stream (what
the conversations read model stores and ingest decides new messages on).

Why a strict fold: :func:`evolve` applies an event only when its version is exactly ``state.version + 1``
and ignores anything else (a duplicate, a replay, or an event beyond a gap). The state is therefore always
the fold of a gapless prefix of the log, so applying the same events twice, or with duplicates, changes
nothing, and a projection that missed events stays behind (and is caught up from the log by ingest)
instead of silently skipping a message.

Participants are tracked by message index, the conversation's own clock:

- a bot's presence is a half-open interval ``[from_index, until_index)`` of the messages whose scene it
  was in (``until_index`` is ``None`` while it is still present); a bot that leaves and comes back gets a
  second interval. A message with an empty ``bot_ids`` leaves the scene unchanged: platforms that fill
  ``bot_ids`` only on some messages would otherwise make every bot leave and rejoin constantly.
- a persona switch is recorded at the index of the first message with the new persona. A message whose
  ``persona_id`` is null switches to "no persona" only when the user wrote it; a bot's message without a
  persona id says nothing about the user's persona.

``token_count`` is the sum of the token estimates of messages as first recorded (edits and deletions do not
change it: they do not carry the old estimate, and a pure fold cannot look it up). The messages read model
has the exact live tokens per message.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mnemo.shared.events.envelope import EventEnvelope, stream_parts
from mnemo.shared.events.recorded import (
    CONVERSATION_FORKED,
    MESSAGE_DELETED,
    MESSAGE_EDITED,
    MESSAGE_RECORDED,
    MessageRecorded,
)
from mnemo.shared.events.recorded import conversation_stream as _conversation_stream


def as_utc(value: datetime) -> datetime:
    """MongoDB hands back naive UTC datetimes unless the client is ``tz_aware``; make them aware."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class BotPresence(BaseModel):
    """``bot_id`` was in the scene for messages ``from_index`` up to (excluding) ``until_index``."""

    model_config = ConfigDict(frozen=True)

    bot_id: str
    from_index: int = Field(..., ge=0)
    until_index: int | None = Field(None, description="exclusive; None while the bot is still present")

    def covers(self, index: int) -> bool:
        return self.from_index <= index and (self.until_index is None or index < self.until_index)


class PersonaSwitch(BaseModel):
    """From message ``from_index`` on, the user plays as ``persona_id`` (None: no persona)."""

    model_config = ConfigDict(frozen=True)

    persona_id: str | None
    from_index: int = Field(..., ge=0)


class ConversationState(BaseModel):
    """The projection of one conversation stream; ``version`` is the last log version folded in."""

    model_config = ConfigDict(frozen=True)

    stream_id: str
    tenant_id: str
    user_id: str
    conversation_id: str
    version: int = Field(0, ge=0)
    message_count: int = Field(0, ge=0, description="messages ever recorded; the next message's index")
    deleted_count: int = Field(0, ge=0)
    edit_count: int = Field(0, ge=0)
    token_count: int = Field(0, ge=0, description="token estimates of messages as first recorded")
    bots: tuple[BotPresence, ...] = ()
    persona_switches: tuple[PersonaSwitch, ...] = ()
    first_message_at: datetime | None = None
    last_message_at: datetime | None = None
    forked_from: str | None = Field(None, description="the parent conversation, for a fork (docs/branches.md)")
    fork_index: int | None = Field(None, description="the parent's last message index the fork kept")
    root_conversation_id: str | None = Field(None, description="a fork's family root; None: never forked")

    @field_validator("first_message_at", "last_message_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else as_utc(value)

    @classmethod
    def initial(cls, tenant_id: str, user_id: str, conversation_id: str) -> ConversationState:
        return cls(
            stream_id=_conversation_stream(tenant_id, user_id, conversation_id),
            tenant_id=tenant_id,
            user_id=user_id,
            conversation_id=conversation_id,
        )

    @classmethod
    def for_stream(cls, stream_id: str) -> ConversationState:
        kind, parts = stream_parts(stream_id)
        if kind != "conversation" or len(parts) != 3:
            raise ValueError(f"not a conversation stream: {stream_id!r}")
        return cls.initial(*parts)

    @property
    def live_message_count(self) -> int:
        return self.message_count - self.deleted_count

    @property
    def present_bot_ids(self) -> list[str]:
        return [b.bot_id for b in self.bots if b.until_index is None]

    @property
    def persona_id(self) -> str | None:
        """The user's current persona."""
        return self.persona_switches[-1].persona_id if self.persona_switches else None

    def bots_at(self, index: int) -> list[str]:
        """The bots that were in the scene when message ``index`` was said."""
        return [b.bot_id for b in self.bots if b.covers(index)]

    def persona_at(self, index: int) -> str | None:
        current: str | None = None
        for switch in self.persona_switches:
            if switch.from_index > index:
                break
            current = switch.persona_id
        return current

    @property
    def family_root(self) -> str:
        """The conversation every fork of this one's family descends from (itself if never forked)."""
        return self.root_conversation_id or self.conversation_id

    def to_doc(self) -> dict[str, Any]:
        return {"_id": self.stream_id, **self.model_dump(mode="python")}

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> ConversationState:
        return cls.model_validate({k: v for k, v in doc.items() if k != "_id"})


def _scene_changes(state: ConversationState, bot_ids: list[str], index: int) -> tuple[BotPresence, ...]:
    if not bot_ids:
        return state.bots
    wanted = set(bot_ids)
    present = set(state.present_bot_ids)
    bots = [
        b.model_copy(update={"until_index": index}) if b.until_index is None and b.bot_id not in wanted else b
        for b in state.bots
    ]
    bots.extend(BotPresence(bot_id=b, from_index=index) for b in dict.fromkeys(bot_ids) if b not in present)
    return tuple(bots)


def _persona_changes(state: ConversationState, msg: MessageRecorded) -> tuple[PersonaSwitch, ...]:
    if msg.persona_id is None and msg.role != "user":
        return state.persona_switches
    if state.persona_switches and state.persona_id == msg.persona_id:
        return state.persona_switches
    if not state.persona_switches and msg.persona_id is None:
        return state.persona_switches  # "no persona" from the start is not a switch
    return (*state.persona_switches, PersonaSwitch(persona_id=msg.persona_id, from_index=msg.index))


def _on_message_recorded(state: ConversationState, envelope: EventEnvelope) -> dict[str, Any]:
    msg = MESSAGE_RECORDED.parse(envelope.payload)
    created = as_utc(msg.created_at)
    return {
        "message_count": max(state.message_count, msg.index + 1),
        "token_count": state.token_count + msg.tokens,
        "bots": _scene_changes(state, msg.bot_ids, msg.index),
        "persona_switches": _persona_changes(state, msg),
        "first_message_at": state.first_message_at or created,
        "last_message_at": max(state.last_message_at, created) if state.last_message_at else created,
    }


def _on_message_edited(state: ConversationState, envelope: EventEnvelope) -> dict[str, Any]:
    return {"edit_count": state.edit_count + 1}


def _on_message_deleted(state: ConversationState, envelope: EventEnvelope) -> dict[str, Any]:
    return {"deleted_count": state.deleted_count + 1}


def _on_forked(state: ConversationState, envelope: EventEnvelope) -> dict[str, Any]:
    fork = CONVERSATION_FORKED.parse(envelope.payload)
    return {
        "forked_from": fork.parent_conversation_id,
        "fork_index": fork.from_index,
        "root_conversation_id": fork.root_conversation_id,
    }


# Event type -> the fields it changes; any other type of the stream only advances the version.
_CHANGES: dict[str, Callable[[ConversationState, EventEnvelope], dict[str, Any]]] = {
    CONVERSATION_FORKED.name: _on_forked,
    MESSAGE_RECORDED.name: _on_message_recorded,
    MESSAGE_EDITED.name: _on_message_edited,
    MESSAGE_DELETED.name: _on_message_deleted,
}


def evolve(state: ConversationState, envelope: EventEnvelope) -> ConversationState:
    """The state after ``envelope``; unchanged unless it is the very next event of this stream."""
    if envelope.stream_id != state.stream_id or envelope.version != state.version + 1:
        return state
    changes: dict[str, Any] = {"version": envelope.version}
    on_event = _CHANGES.get(envelope.type)
    if on_event is not None:
        changes.update(on_event(state, envelope))
    return state.model_copy(update=changes)


def fold(state: ConversationState, envelopes: Iterable[EventEnvelope]) -> ConversationState:
    """Apply ``envelopes`` of this stream in version order (others and duplicates are ignored)."""
    for envelope in sorted(envelopes, key=lambda e: e.version):
        state = evolve(state, envelope)
    return state


def by_stream(envelopes: Iterable[EventEnvelope]) -> dict[str, list[EventEnvelope]]:
    """``envelopes`` (any order across streams) grouped by stream, each stream's in version order."""
    grouped: dict[str, list[EventEnvelope]] = defaultdict(list)
    for env in envelopes:
        grouped[env.stream_id].append(env)
    for events in grouped.values():
        events.sort(key=lambda e: e.version)
    return dict(grouped)


async def folded_states(
    streams: Mapping[str, Sequence[EventEnvelope]],
    known: Mapping[str, ConversationState] | None,
    load: Callable[[list[str]], Awaitable[Mapping[str, ConversationState]]],
) -> tuple[dict[str, ConversationState], dict[str, ConversationState]]:
    """The state of each conversation among ``streams`` before and after its events there, the read model's
    side of a projection: ``known`` states are taken as they are (ingest loaded them), the others ``load``ed."""
    conversations = [s for s in streams if stream_parts(s)[0] == "conversation"]
    before = dict(known or {})
    before.update(await load([s for s in conversations if s not in before]))
    return before, {s: fold(before[s], streams[s]) for s in conversations}
