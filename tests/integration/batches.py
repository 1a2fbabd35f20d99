"""A batch consumer of raw payloads for the delivery tests: it hands each batch's bytes to ``handle`` and
dead-letters under ``name``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from nats.aio.msg import Msg

from mnemo.shared.broker import make_broker
from mnemo.shared.delivery import BatchConsumer, DeadLetters, Item, Rejection
from mnemo.shared.settings import DeliverySettings, Settings

Handle = Callable[[list[Item[bytes]]], Awaitable[list[Rejection]]]


def _payload(msg: Msg) -> bytes:
    return msg.data


def bytes_consumer(nats_url: str, name: str, handle: Handle, delivery: DeliverySettings) -> BatchConsumer[bytes]:
    return BatchConsumer(
        decode=_payload,
        handle=handle,
        dead_letters=DeadLetters(make_broker(Settings(nats_url=nats_url), name), name),
        max_deliver=delivery.max_deliver,
        ack_wait_s=delivery.ack_wait_s,
    )
