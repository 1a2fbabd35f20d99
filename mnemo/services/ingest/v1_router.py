"""The v1 router: chat events published on v1 subjects, moved to their keyed subjects, in order.

A v1 subject (``mnemo.chat.message.created.v1``) names no tenant or conversation, so NATS cannot map it to a
partition. The router reads them (durable ``mnemo_ingest_v1``, filter ``mnemo.chat.>``: what the stream did not map to a partition; one replica at a
time, holding the ``ingest_v1`` lease; batches begun in stream order by the order gate) and publishes each valid
one, body unchanged, on its keyed subject, from where the stream maps it into its conversation's partition like
any v2 event: old clients keep working through the same partitions. What fails validation is dead-lettered here,
with the reason ingest itself would give (an unknown subject too).

Order: a batch is published in waves, wave ``k`` holding the ``k``-th event of every conversation (bot, persona)
of the batch, all in flight at once; a wave starts once the previous one is acknowledged, so an event is stored
only after the earlier events of its conversation. A failed publish fails the batch, which is retried in place
from its start: ``Nats-Msg-Id`` ``v1:<stream sequence>`` makes JetStream drop what was stored already (within its
duplicate window; past it, ingest's own idempotency records nothing twice). A v1 event is acknowledged only once
its keyed copy is stored. The cost of the hop: one more JetStream write per v1 event (clients publishing keyed
subjects do not pay it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from nats.js import JetStreamContext

from mnemo.services.ingest.domain import InboundCommand
from mnemo.services.ingest.handlers import KEYS
from mnemo.shared import subjects
from mnemo.shared.delivery import TRACEPARENT, Completion, Item, Rejection
from mnemo.shared.delivery.dead_letters import ORIGINAL_SUBJECT
from mnemo_client.wire.keyed import subject_token


class RoutingFailed(RuntimeError):
    """A keyed copy was not acknowledged: the batch is retried from its start."""


def keyed_subject_of(v1_subject: str, command: InboundCommand) -> str:
    key = getattr(command, KEYS[v1_subject])
    return subjects.keyed(v1_subject, subject_token(command.tenant_id), subject_token(key))


def waves(items: Sequence[Item[InboundCommand]]) -> list[list[tuple[Item[InboundCommand], str]]]:
    """The items with their keyed subjects, wave ``k`` holding the ``k``-th item of every key (tenant and
    conversation, bot or persona: whatever the event type), in order."""
    seen: dict[str, int] = {}
    out: list[list[tuple[Item[InboundCommand], str]]] = []
    for item in items:
        subject = keyed_subject_of(item.subject, item.value)
        key = subject.split(".", 5)[5]  # "<tenant>.<key>": events of one conversation share it, whatever their type
        k = seen.get(key, 0)
        seen[key] = k + 1
        if k == len(out):
            out.append([])
        out[k].append((item, subject))
    return out


class V1Router:
    """The staged handler of the v1 durable: the first stage publishes the keyed copies, nothing is left after."""

    def __init__(self, js: JetStreamContext, *, timeout_s: float = 5.0) -> None:
        self._js = js
        self._timeout_s = timeout_s

    async def begin(self, items: list[Item[InboundCommand]]) -> Completion:
        for wave in waves(items):
            await self._publish(wave)

        async def nothing_refused() -> Sequence[Rejection]:
            return []

        return nothing_refused

    async def _publish(self, wave: list[tuple[Item[InboundCommand], str]]) -> None:
        acks: list[asyncio.Future[Any]] = []
        for item, subject in wave:
            headers = {"Nats-Msg-Id": f"v1:{item.msg.metadata.sequence.stream}", ORIGINAL_SUBJECT: item.subject}
            if (traceparent := item.traceparent) is not None:
                headers[TRACEPARENT] = traceparent
            acks.append(
                await self._js.publish_async(subject, item.msg.data, wait_stall=self._timeout_s, headers=headers)
            )
        done, late = await asyncio.wait(acks, timeout=self._timeout_s)
        for future in late:
            future.cancel()
        failed = [f.exception() for f in done if f.exception() is not None]
        if late or failed:
            reason = failed[0] if failed else f"no PubAck within {self._timeout_s}s"
            raise RoutingFailed(f"{len(late) + len(failed)} of {len(wave)} keyed copies not stored: {reason!r}")
