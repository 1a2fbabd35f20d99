"""One entry of the contract registry (``Operation``), the error codes, and the Nats-Msg-Id rule."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

LORE_ERRORS = ("bad_request", "not_found", "book_too_large", "too_many_books", "rate_limited", "internal")
MEMORY_ERRORS = ("bad_request", "not_found", "rate_limited", "internal")


@dataclass(frozen=True)
class Operation:
    """One public subject. ``kind``: `event` (publish to JetStream) or `request` (request-reply)."""

    name: str  # a stable short name for clients and the gateway: `chat.message.created`, `lore.import`
    subject: str
    kind: Literal["event", "request"]
    payload: type[BaseModel]
    description: str
    service: str  # the service that consumes (events: ingest) or answers the subject
    example: dict[str, Any]
    reply: type[BaseModel] | None = None
    errors: tuple[str, ...] = ()
    reply_example: dict[str, Any] | None = None
    note: str = ""  # extra words for the contract table (docs/contract.md)
    tags: tuple[str, ...] = field(default=())
    # Events: the payload fields whose JSON values make the Nats-Msg-Id (see ``nats_msg_id``).
    msg_id: tuple[str, ...] = ()
    # Who may call it: the platforms (through NATS or the gateway), or operators only (``admin``; no gateway route).
    audience: Literal["platform", "admin"] = "platform"
    # Events: the payload field that keys the event beside its tenant (the conversation, the bot, the persona):
    # the keyed (v2) subject carries both, and NATS maps it to an ingest partition (docs/scaling.md).
    key: str = ""

    @property
    def keyed_subject(self) -> str:
        """The v2 subject template, ``mnemo.chat.message.created.v2.{tenant_id}.{conversation_id}`` (events only;
        ``mnemo_client.wire.keyed.keyed_subject`` fills it in)."""
        if not self.key:
            return ""
        return f"{self.subject.removesuffix('.v1')}.v2.{{tenant_id}}.{{{self.key}}}"


def event(
    name: str,
    subject: str,
    payload: type[BaseModel],
    description: str,
    example: dict[str, Any],
    note: str = "",
    *,
    msg_id: tuple[str, ...],
    key: str,
) -> Operation:
    return Operation(
        name,
        subject,
        "event",
        payload,
        description,
        "ingest",
        example,
        note=note,
        tags=("chat",),
        msg_id=msg_id,
        key=key,
    )


def nats_msg_id(op: Operation, body: dict[str, Any]) -> str:
    """The ``Nats-Msg-Id`` of an event: its name and the values of its ``msg_id`` fields in the JSON body
    (an absent or null field as empty), joined by ``:``. A retry of the same event has the same id, so
    JetStream drops the duplicate; a different event (another message, a later edit or upsert) has another."""
    return ":".join([op.name, *("" if body.get(f) is None else str(body[f]) for f in op.msg_id)])


def rpc(
    name: str,
    subject: str,
    payload: type[BaseModel],
    reply: type[BaseModel],
    service: str,
    description: str,
    example: dict[str, Any],
    reply_example: dict[str, Any] | None = None,
    *,
    errors: tuple[str, ...],
    note: str = "",
    audience: Literal["platform", "admin"] = "platform",
) -> Operation:
    area = name.split(".", 1)[0]
    return Operation(
        name, subject, "request", payload, description, service, example, reply, errors, reply_example, note, (area,),
        audience=audience,
    )  # fmt: skip
