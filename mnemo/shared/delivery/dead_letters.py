"""Dead letters (the original body on ``mnemo.dlq.<service>.v1`` with the reason in headers), retry backoff, heartbeats."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from faststream.nats import NatsBroker
from nats.aio.msg import Msg

from mnemo.shared import subjects
from mnemo.shared.metrics import DEAD_LETTERED
from mnemo.shared.tasks import in_background

log = logging.getLogger(__name__)

# Headers of a dead letter; the body is the original message's body, unchanged.
DLQ_REASON = "Mnemo-Dlq-Reason"
DLQ_SUBJECT = "Mnemo-Dlq-Original-Subject"
DLQ_SERVICE = "Mnemo-Dlq-Service"
DLQ_ATTEMPTS = "Mnemo-Dlq-Attempts"
#: Set by whoever moved a message from the subject it was published on (ingest's v1 router): the subject a
#: dead letter names, so that a redrive publishes it where its publisher did.
ORIGINAL_SUBJECT = "Mnemo-Original-Subject"


#: The ``reason`` label of ``mnemo_messages_dead_lettered_total``: a closed set, never the reason's text.
REASON_CATEGORIES = ("invalid_payload", "message_too_large", "unknown_subject", "refused", "retries_exhausted")


def reason_category(reason: str) -> str:
    """The category of a dead letter's reason, as the delivery code and the handlers word them."""
    if "message_too_large" in reason:
        return "message_too_large"
    if reason.startswith("failed ") and " times" in reason:
        return "retries_exhausted"
    if "unknown subject" in reason:
        return "unknown_subject"
    return "invalid_payload" if reason.startswith("invalid") else "refused"


def retry_delay(attempt: int) -> float:
    """Exponential backoff for naks: 0.5 s, 1 s, 2 s, ... capped at 30 s."""
    return float(min(30.0, 0.5 * 2 ** max(0, attempt - 1)))


class DeadLetters:
    def __init__(self, broker: NatsBroker, service: str) -> None:
        self._broker = broker
        self.service = service
        self.subject = subjects.dead_letter_subject(service)
        self._counters = {c: DEAD_LETTERED.labels(service=service, reason=c) for c in REASON_CATEGORIES}

    async def send(self, msg: Msg, reason: str) -> None:
        meta = msg.metadata
        headers = {
            DLQ_REASON: reason[:4000].replace("\r", " ").replace("\n", " "),
            DLQ_SUBJECT: (msg.headers or {}).get(ORIGINAL_SUBJECT) or subjects.public_subject(msg.subject),
            DLQ_SERVICE: self.service,
            DLQ_ATTEMPTS: str(meta.num_delivered),
            # A dead letter re-sent after a crash is deduplicated by its origin's stream position.
            "Nats-Msg-Id": f"dlq:{self.service}:{meta.stream}:{meta.sequence.stream}",
        }
        # Through the broker (not raw nats-py) so the dead letter carries the trace context too.
        await self._broker.publish(msg.data, self.subject, headers=headers, stream=subjects.DLQ_STREAM)
        category = reason_category(reason)
        self._counters[category].inc()
        # The reason and the event's id (its Nats-Msg-Id: a log event's event_id), never the message's text.
        event_id = (msg.headers or {}).get("Nats-Msg-Id")
        extra = {"event_id": event_id, "reason_category": category, "stream_seq": meta.sequence.stream}
        log.warning(
            "dead-lettered event %s (%s #%d) from %s, %s: %s",
            event_id, meta.stream, meta.sequence.stream, self.service, category, reason[:500], extra=extra,
        )  # fmt: skip


@contextlib.asynccontextmanager
async def heartbeat(msgs: Sequence[Msg], every_s: float):  # type: ignore[no-untyped-def]
    """Tell JetStream the batch is still being worked on, so it is not redelivered mid-flight."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(every_s)
            for m in msgs:
                if m.is_acked:  # settled already (acked, nak'ed or dead-lettered)
                    continue
                with contextlib.suppress(Exception):
                    await m.in_progress()

    async with in_background(beat()):
        yield
