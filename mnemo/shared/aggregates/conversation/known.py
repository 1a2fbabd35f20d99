"""The statuses of a conversation's messages, as its log events tell them: what ingest decides edits, deletes and
redeliveries on (the messages read model holds them for what is projected; these cover the log tail it lacks)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mnemo.shared.events.envelope import EventEnvelope, Payload
from mnemo.shared.events.recorded import MESSAGE_DELETED, MESSAGE_RECORDED


@dataclass(frozen=True)
class KnownMessage:
    """What deciding a command needs of one message: its index, and whether it was deleted (-1: a deletion whose
    recording is older than the events folded)."""

    index: int
    deleted: bool


def _recorded(known: dict[str, KnownMessage], payload: Payload) -> None:
    known[str(payload["message_id"])] = KnownMessage(int(payload["index"]), deleted=False)


def _deleted(known: dict[str, KnownMessage], payload: Payload) -> None:
    message_id = str(payload["message_id"])
    before = known.get(message_id)
    known[message_id] = KnownMessage(before.index if before else -1, deleted=True)


# Event type -> what it tells about a message; other conversation events tell nothing ingest needs.
_KNOWN_FROM: dict[str, Callable[[dict[str, KnownMessage], Payload], None]] = {
    MESSAGE_RECORDED.name: _recorded,
    MESSAGE_DELETED.name: _deleted,
}


def learn(known: dict[str, KnownMessage], envelope: EventEnvelope) -> None:
    """Note in ``known`` what ``envelope`` (the next event of those folded into it) tells about a message."""
    # Read straight from the payloads (decoded, upcast envelopes always carry these keys): validating whole
    # payload models here cost ingest ~3 % of its CPU, for two fields.
    on_event = _KNOWN_FROM.get(envelope.type)
    if on_event is not None:
        on_event(known, envelope.payload)


def known_from_events(envelopes: Iterable[EventEnvelope]) -> dict[str, KnownMessage]:
    """Messages recorded or deleted by these conversation events (the log tail a read model lacks)."""
    known: dict[str, KnownMessage] = {}
    for env in sorted(envelopes, key=lambda e: e.version):
        learn(known, env)
    return known
