"""Dead letters (the original body on ``mnemo.dlq.<service>.v1`` with the reason in headers), retry backoff, heartbeats."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from faststream.nats import NatsBroker
from nats.aio.msg import Msg

from mnemo.shared import subjects

log = logging.getLogger(__name__)

# Headers of a dead letter; the body is the original message's body, unchanged.
DLQ_REASON = "Mnemo-Dlq-Reason"
DLQ_SUBJECT = "Mnemo-Dlq-Original-Subject"
DLQ_SERVICE = "Mnemo-Dlq-Service"
DLQ_ATTEMPTS = "Mnemo-Dlq-Attempts"


def retry_delay(attempt: int) -> float:
    """Exponential backoff for naks: 0.5 s, 1 s, 2 s, ... capped at 30 s."""
    return float(min(30.0, 0.5 * 2 ** max(0, attempt - 1)))


class DeadLetters:
    def __init__(self, broker: NatsBroker, service: str) -> None:
        self._broker = broker
        self.service = service
        self.subject = subjects.dead_letter_subject(service)

    async def send(self, msg: Msg, reason: str) -> None:
        meta = msg.metadata
        headers = {
            DLQ_REASON: reason[:4000].replace("\r", " ").replace("\n", " "),
            DLQ_SUBJECT: msg.subject,
            DLQ_SERVICE: self.service,
            DLQ_ATTEMPTS: str(meta.num_delivered),
            # A dead letter re-sent after a crash is deduplicated by its origin's stream position.
            "Nats-Msg-Id": f"dlq:{self.service}:{meta.stream}:{meta.sequence.stream}",
        }
        # Through the broker (not raw nats-py) so the dead letter carries the trace context too.
        await self._broker.publish(msg.data, self.subject, headers=headers, stream=subjects.DLQ_STREAM)
        log.warning("dead-lettered %s from %s: %s", msg.subject, self.service, reason)


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

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
