"""Dead letters: list the ``MNEMO_DLQ`` stream and redrive its messages to the subjects they came from.

A dead letter is the original body on ``mnemo.dlq.<service>.v1`` with headers naming the reason, the original
subject, the service and the attempts (``mnemo/shared/delivery/dead_letters.py``). Redriving publishes the body to
its original subject with ``Nats-Msg-Id`` = ``redrive:<dlq seq>`` (a redrive repeated within the duplicate
window is stored once) and, once JetStream has acknowledged it, deletes the dead letter. A dead letter from a
log consumer goes back on its ``mnemo.log.*`` subject, so every consumer of that event sees it again: they are
idempotent (the event id decides), which is what makes that safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from nats.aio.client import Client as NatsClient
from nats.js.errors import NotFoundError

from mnemo.shared import subjects
from mnemo.shared.delivery.dead_letters import DLQ_ATTEMPTS, DLQ_REASON, DLQ_SERVICE, DLQ_SUBJECT


@dataclass(frozen=True)
class DeadLetter:
    seq: int
    service: str
    original_subject: str
    reason: str
    attempts: str
    time: datetime | None
    data: bytes


async def dead_letters(nc: NatsClient, service: str | None = None) -> list[DeadLetter]:
    """Every dead letter in the stream (of ``service`` only, when given), oldest first."""
    js = nc.jetstream()
    subject = subjects.dead_letter_subject(service) if service else subjects.DLQ_ALL
    try:
        info = await js.stream_info(subjects.DLQ_STREAM)
    except NotFoundError:
        return []
    found: list[DeadLetter] = []
    seq = info.state.first_seq
    while info.state.messages and seq <= info.state.last_seq:
        try:
            raw = await js.get_msg(subjects.DLQ_STREAM, seq=seq, subject=subject, next=True)
        except NotFoundError:
            break
        headers = raw.headers or {}
        found.append(
            DeadLetter(
                seq=int(raw.seq or 0),
                service=headers.get(DLQ_SERVICE, ""),
                original_subject=headers.get(DLQ_SUBJECT, ""),
                reason=headers.get(DLQ_REASON, ""),
                attempts=headers.get(DLQ_ATTEMPTS, ""),
                time=raw.time,
                data=raw.data or b"",
            )
        )
        seq = int(raw.seq or seq) + 1
    return found


async def redrive(nc: NatsClient, letters: list[DeadLetter]) -> list[tuple[DeadLetter, str]]:
    """Publish each to its original subject, then delete it; returns (letter, outcome) pairs."""
    js = nc.jetstream()
    outcomes: list[tuple[DeadLetter, str]] = []
    for letter in letters:
        if not letter.original_subject or letter.original_subject.startswith(subjects.DLQ_PREFIX):
            outcomes.append((letter, "skipped: no original subject"))
            continue
        ack = await js.publish(letter.original_subject, letter.data, headers={"Nats-Msg-Id": f"redrive:{letter.seq}"})
        await js.delete_msg(subjects.DLQ_STREAM, letter.seq)
        outcomes.append((letter, f"{'duplicate of' if ack.duplicate else 'now'} {ack.stream} #{ack.seq}"))
    return outcomes
