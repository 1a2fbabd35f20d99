"""Messages' points (kind ``message``): one per chunk of the current text, planned from the log (pure).

- ``message.recorded``: chunk the content and index every chunk.
- ``message.edited``: delete the message's points, then index the new content (with the original's scene).
- ``message.deleted``: delete the message's points.

Within a batch only the *last* event of each message counts (an edit after a create in the same batch must
not leave chunks of the old text), and an event older than what the messages read model already shows for
that message (a redelivery arriving after a later edit or delete) is skipped, so a late redelivery cannot
resurrect old or deleted text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mnemo.services.embedding.plan import Chunker, PendingPoint, Plan, epoch
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    MESSAGE_DELETED,
    MESSAGE_EDITED,
    MESSAGE_RECORDED,
    MessageEditRecorded,
    MessageRecorded,
)
from mnemo.shared.presence import message_audience
from mnemo.shared.readmodels import MessageKey, MessageStatus
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import PayloadValue


def message_key(envelope: EventEnvelope) -> MessageKey:
    p = envelope.payload
    return MessageKey(envelope.tenant_id, str(p["user_id"]), str(p["conversation_id"]), str(p["message_id"]))


def is_stale(env: EventEnvelope, status: MessageStatus | None) -> bool:
    """A later edit or delete of this message is already projected: this event's text is outdated."""
    return status is not None and (status.deleted or status.version > env.version)


def _scene(base: MessageRecorded | MessageStatus) -> dict[str, PayloadValue]:
    created = base.created_at
    return {
        vp.BOT_IDS: list(base.bot_ids),
        vp.AUDIENCE: message_audience(base.bot_ids),
        vp.PERSONA_ID: base.persona_id,
        vp.AUTHOR_ID: base.author_id,
        vp.ROLE: base.role,
        vp.INDEX: base.index,
        vp.CREATED_AT: epoch(created) if created is not None else None,
    }


def message_points(
    env: EventEnvelope, content: str, base: MessageRecorded | MessageStatus | None, model: str, chunker: Chunker
) -> list[PendingPoint]:
    """The points of ``content``'s chunks; ``base`` gives the scene (who witnessed it, ...), when known."""
    key = message_key(env)
    payload: dict[str, PayloadValue] = {
        vp.TENANT_ID: key.tenant_id,
        vp.USER_ID: key.user_id,
        vp.CONVERSATION_ID: key.conversation_id,
        vp.MESSAGE_ID: key.message_id,
        vp.KIND: vp.MESSAGE,
        vp.SOURCE_ID: key.message_id,
        vp.MODEL: model,
    }
    if base is not None:  # an edit keeps the scene of the original message (from the read model)
        payload |= _scene(base)
    return [
        PendingPoint(
            vp.point_id(vp.MESSAGE, key.tenant_id, key.user_id, key.conversation_id, key.message_id, i),
            text,
            payload | {vp.CHUNK: i},
        )
        for i, text in enumerate(chunker(content))
    ]


@dataclass(frozen=True)
class _Step:
    """What a message's last event of the batch does: drop its old points, and the points to write."""

    delete: bool = False
    points: list[PendingPoint] = field(default_factory=list)


_Planner = Callable[[EventEnvelope, MessageStatus | None, str, Chunker], _Step]


def _recorded(env: EventEnvelope, status: MessageStatus | None, model: str, chunker: Chunker) -> _Step:
    if is_stale(env, status):
        return _Step()
    msg = MessageRecorded.model_validate(env.payload)
    return _Step(points=message_points(env, msg.content, msg, model, chunker))


def _edited(env: EventEnvelope, status: MessageStatus | None, model: str, chunker: Chunker) -> _Step:
    if is_stale(env, status):
        return _Step()
    edit = MessageEditRecorded.model_validate(env.payload)
    return _Step(True, message_points(env, edit.content, status, model, chunker))


def _deleted(env: EventEnvelope, status: MessageStatus | None, model: str, chunker: Chunker) -> _Step:
    return _Step(delete=True)  # even when stale: a deletion is final


_PLANNERS: dict[str, _Planner] = {
    MESSAGE_RECORDED.name: _recorded,
    MESSAGE_EDITED.name: _edited,
    MESSAGE_DELETED.name: _deleted,
}
MESSAGE_EVENTS = frozenset(_PLANNERS)


def latest_message_events(envelopes: Iterable[EventEnvelope]) -> dict[MessageKey, EventEnvelope]:
    """The last event (highest log version) of each message among ``envelopes`` (other events are ignored)."""
    latest: dict[MessageKey, EventEnvelope] = {}
    for env in envelopes:
        if env.type in MESSAGE_EVENTS:
            key = message_key(env)
            if key not in latest or env.version > latest[key].version:
                latest[key] = env
    return latest


def plan_messages(
    envelopes: Sequence[EventEnvelope],
    plan: Plan,
    *,
    statuses: Mapping[MessageKey, MessageStatus],
    model: str,
    chunker: Chunker,
) -> None:
    """Add the messages' deletions (one filter per conversation) and points to ``plan``; ``statuses`` (with
    scenes) from the messages read model, for the keys of :func:`latest_message_events`."""
    deleted_by_conversation: dict[tuple[str, str, str], list[str]] = {}
    for key, env in latest_message_events(envelopes).items():
        step = _PLANNERS[env.type](env, statuses.get(key), model, chunker)
        if step.delete:
            deleted_by_conversation.setdefault(key[:3], []).append(key.message_id)
        plan.points.extend(step.points)
    plan.deletions.extend(vp.messages_by_id(*conv, ids) for conv, ids in deleted_by_conversation.items())
