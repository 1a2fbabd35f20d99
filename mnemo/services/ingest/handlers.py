"""Ingest's consumer callbacks: decode a platform message by subject, hand the batch to the recorder.

Contract: subjects ``mnemo.chat.<entity>.<fact>.v1`` and their keyed form
``mnemo.chat.<entity>.<fact>.v2.<tenant>.<key>`` on the MNEMO_CHAT stream, which stores the keyed form in the
ingest partitions (``mnemo.ingest.<count>.<partition>.``...; v1 events get there through the v1 router). A keyed
event whose subject tokens are not its payload's tenant and key is dead-lettered, naming the right subject: in
another partition than its conversation's, it could be recorded out of order. A message on an unknown
subject or with a payload that fails the wire model is dead-lettered at once with the reason
(``InvalidMessage``), and so is one larger than its tenant's ``MNEMO_LIMITS__MAX_MESSAGE_BYTES`` (reason
``message_too_large: ...``, checked on the raw bytes before parsing, then against the tenant's own limit);
a refused command (an edit of an unknown message) is dead-lettered with its reason;
everything else is acked once its events are durable in the log. Idempotency key: the platform's ids (see
``domain.py``), so redeliveries and re-publishes record nothing new.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, ValidationError

from mnemo.services.ingest.domain import InboundCommand
from mnemo.services.ingest.recorder import Finish
from mnemo.shared import subjects
from mnemo.shared.contract_registry import OPERATIONS
from mnemo.shared.delivery import Completion, InvalidMessage, Item, Rejection
from mnemo.shared.metrics import INGEST_MESSAGES
from mnemo.shared.settings import LimitsSettings
from mnemo_client.wire.keyed import subject_token

#: v1 subject -> its payload model: every event subject of the contract registry is a chat command ingest records.
WIRE_MODELS: dict[str, type[BaseModel]] = {op.subject: op.payload for op in OPERATIONS if op.kind == "event"}

#: v1 subject -> the payload field keying its events beside the tenant (the registry's ``Operation.key``).
KEYS: dict[str, str] = {op.subject: op.key for op in OPERATIONS if op.kind == "event"}


def _summary(exc: ValidationError) -> str:
    parts = [f"{'.'.join(str(p) for p in e['loc']) or '<body>'}: {e['msg']}" for e in exc.errors()[:5]]
    more = f" (+{exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
    return "; ".join(parts) + more


def decode_command(subject: str, data: bytes, limits: LimitsSettings | None = None) -> InboundCommand:
    """The wire model of ``subject`` parsed from ``data``; ``InvalidMessage`` says why not."""
    limits = limits or LimitsSettings()
    model = WIRE_MODELS.get(subject)
    if model is None:
        raise InvalidMessage(f"unknown subject {subject!r}; ingest accepts {', '.join(WIRE_MODELS)}")
    if len(data) > limits.largest_message_bytes:  # refused unread: parsing it is the cost being limited
        raise InvalidMessage(_too_large(len(data), limits.largest_message_bytes))
    try:
        command = model.model_validate_json(data)
    except ValidationError as exc:
        raise InvalidMessage(f"{model.__name__} rejected: {_summary(exc)}") from None
    assert isinstance(command, InboundCommand)
    own = limits.for_tenant(command.tenant_id).max_message_bytes if limits.tenants else limits.max_message_bytes
    if len(data) > own:
        raise InvalidMessage(_too_large(len(data), own))
    return command


def decode_keyed(stored_subject: str, data: bytes, limits: LimitsSettings | None = None) -> InboundCommand:
    """The command of a keyed event, as stored in a partition (or as published: ``mnemo.chat....v2.<t>.<k>``);
    ``InvalidMessage`` when it fails like a v1 event would, or when its subject names another tenant or key."""
    public = subjects.public_subject(stored_subject)
    parts = public.split(".")
    v1 = subjects.v1_of(public)
    if len(parts) != 7 or parts[4] != "v2" or v1 not in WIRE_MODELS:
        keyed = ", ".join(f"{s.removesuffix('.v1')}.v2.<tenant>.<key>" for s in WIRE_MODELS)
        raise InvalidMessage(f"unknown subject {public!r}; ingest accepts {keyed}")
    command = decode_command(v1, data, limits)
    field = KEYS[v1]
    expected = subjects.keyed(v1, subject_token(command.tenant_id), subject_token(getattr(command, field)))
    if public != expected:
        raise InvalidMessage(
            f"subject {public!r} does not name the payload's tenant_id and {field}: publish it on {expected!r}"
        )
    return command


def _too_large(size: int, limit: int) -> str:
    return f"message_too_large: {size} bytes, over the tenant's {limit} (MNEMO_LIMITS__MAX_MESSAGE_BYTES)"


class Recording(Protocol):
    """What records a batch in two stages: the ``Recorder``, or the ``GroupCommit`` in front of it."""

    async def begin(self, commands: Sequence[InboundCommand], traceparents: Sequence[str | None]) -> Finish: ...


class IngestHandler:
    """The batch handler given to ``BatchConsumer``: record, then report the refused commands.

    ``begin`` is the staged form (``mnemo.shared.delivery.Staged``): it decides and appends the batch, and returns
    the completion that projects, publishes and reports the refusals, so the next batch overlaps it."""

    def __init__(self, recorder: Recording, partition: str = "0") -> None:
        """``partition``: of the chat stream, the label of ``mnemo_ingest_messages_total``."""
        self._recorder = recorder
        self._counted = INGEST_MESSAGES.labels(partition=partition)

    async def on_chat_batch(self, items: list[Item[InboundCommand]]) -> Sequence[Rejection]:
        return await (await self.begin(items))()

    async def begin(self, items: list[Item[InboundCommand]]) -> Completion:
        finish = await self._recorder.begin([i.value for i in items], [i.traceparent for i in items])
        self._counted.inc(len(items))

        async def complete() -> Sequence[Rejection]:
            reasons = await finish()
            return [Rejection(item.msg, reason) for item, reason in zip(items, reasons, strict=True) if reason]

        return complete
