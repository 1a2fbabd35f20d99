"""Ingest's consumer callbacks: decode a platform message by subject, hand the batch to the recorder.

Contract: subjects ``mnemo.chat.<entity>.<fact>.v1`` on the MNEMO_CHAT stream. A message on an unknown
subject or with a payload that fails the wire model is dead-lettered at once with the reason
(``InvalidMessage``), and so is one larger than its tenant's ``MNEMO_LIMITS__MAX_MESSAGE_BYTES`` (reason
``message_too_large: ...``, checked on the raw bytes before parsing, then against the tenant's own limit);
a refused command (an edit of an unknown message) is dead-lettered with its reason;
everything else is acked once its events are durable in the log. Idempotency key: the platform's ids (see
``domain.py``), so redeliveries and re-publishes record nothing new.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ValidationError

from mnemo.services.ingest.domain import InboundCommand
from mnemo.services.ingest.recorder import Recorder
from mnemo.shared import subjects
from mnemo.shared.delivery import Completion, InvalidMessage, Item, Rejection
from mnemo.shared.metrics import INGEST_MESSAGES
from mnemo.shared.settings import LimitsSettings
from mnemo_client.wire.contract import (
    BotUpserted,
    ConversationForked,
    MessageCreated,
    MessageDeleted,
    MessageEdited,
    MessageSwipeSelected,
    PersonaUpserted,
)

WIRE_MODELS: dict[str, type[BaseModel]] = {
    subjects.MESSAGE_CREATED: MessageCreated,
    subjects.MESSAGE_EDITED: MessageEdited,
    subjects.MESSAGE_DELETED: MessageDeleted,
    subjects.BOT_UPSERTED: BotUpserted,
    subjects.PERSONA_UPSERTED: PersonaUpserted,
    subjects.MESSAGE_SWIPE_SELECTED: MessageSwipeSelected,
    subjects.CONVERSATION_FORKED: ConversationForked,
}


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


def _too_large(size: int, limit: int) -> str:
    return f"message_too_large: {size} bytes, over the tenant's {limit} (MNEMO_LIMITS__MAX_MESSAGE_BYTES)"


class IngestHandler:
    """The batch handler given to ``BatchConsumer``: record, then report the refused commands.

    ``begin`` is the staged form (``mnemo.shared.delivery.Staged``): it decides and appends the batch, and returns
    the completion that projects, publishes and reports the refusals, so the next batch overlaps it."""

    def __init__(self, recorder: Recorder, partition: str = "0") -> None:
        """``partition``: of the chat stream, the label of ``mnemo_ingest_messages_total`` (one partition: "0")."""
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
