"""Routers holding one durable JetStream batch consumer, wired the same way in every service.

Each consumer gets the delivery semantics of :mod:`mnemo.shared.delivery` (explicit acks, dead letters with the
reason, bounded retries, heartbeats), the service's own durable (replicas share it) and dead-letter subject,
and the service's tracer for per-message spans. A ``Staged`` handler overlaps up to
``delivery.pipeline_depth`` batches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from faststream.nats import JStream, NatsRouter
from nats.aio.msg import Msg
from nats.js.errors import NotFoundError

from mnemo.shared import natsconn, subjects
from mnemo.shared.broker import LOG_JSTREAM
from mnemo.shared.delivery import (
    BatchConsumer,
    BatchHandler,
    DeadLetters,
    Decoder,
    NotHandled,
    Staged,
    subscribe_batches,
)
from mnemo.shared.delivery.order import AckFloor, NextOf
from mnemo.shared.deps import Deps
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.subscriptions import EventHandlers
from mnemo.shared.telemetry import tracer

T = TypeVar("T")
#: How long an ordered batch waits for acks in flight to move the ack floor before it is handed back.
ORDER_WAIT_S = 5.0


def consumer_router(
    deps: Deps,
    *,
    service: str,
    subject: str | Sequence[str],
    stream: JStream,
    decode: Decoder[T],
    handle: BatchHandler[T] | Staged[T],
    title: str,
    batch_size: int | None = None,
) -> NatsRouter:
    """``subject``: what the durable filters (one subject, or several: ``filter_subjects``).
    ``batch_size``: messages per pull, when the service wants other than ``delivery.batch_size``."""
    router = NatsRouter()
    delivery = deps.settings.delivery
    if batch_size is not None:
        delivery = delivery.model_copy(update={"batch_size": batch_size})
    durable = subjects.durable(service)
    consumer: BatchConsumer[T] = BatchConsumer(
        decode=decode,
        handle=handle,
        dead_letters=DeadLetters(deps.broker, service),
        max_deliver=deps.settings.delivery.max_deliver,
        ack_wait_s=deps.settings.delivery.ack_wait_s,
        tracer=tracer(service, deps.settings.telemetry),
        in_flight=deps.settings.delivery.pipeline_depth,
    )
    subscribe_batches(
        router,
        subject=subject,
        stream=stream,
        durable=durable,
        consumer=consumer,
        delivery=delivery,
        title=title,
        inbox_prefix=natsconn.inbox_prefix(natsconn.nats_user(deps.settings, service)),
    )
    return router


def next_of(deps: Deps, stream: str, filter_subject: str) -> NextOf:
    """The order gate's look at ``stream``: the first message of ``filter_subject`` at or after a sequence."""

    async def first_at_or_after(seq: int) -> int | None:
        js = deps.broker.config.connection_state.connection.jetstream()
        try:
            found = await js.get_msg(stream, seq=seq, subject=filter_subject, next=True)
        except NotFoundError:
            return None
        return int(found.seq) if found.seq is not None else None

    return first_at_or_after


def ack_floor_of(deps: Deps, stream: str, durable: str) -> AckFloor:
    async def ack_floor() -> int:
        js = deps.broker.config.connection_state.connection.jetstream()
        info = await js.consumer_info(stream, durable)
        return info.ack_floor.stream_seq if info.ack_floor and info.ack_floor.stream_seq else 0

    return ack_floor


def log_consumer_router(
    deps: Deps,
    *,
    service: str,
    handlers: EventHandlers[Any],
    handle: BatchHandler[EventEnvelope] | Staged[EventEnvelope],
    title: str,
    batch_size: int | None = None,
) -> NatsRouter:
    """A consumer of the recorded events ``handlers`` names (``mnemo.shared.subscriptions``): its durable filters
    their subjects alone, and each is decrypted (only the fields its handler reads) and upcast by the codec; an
    event that cannot be decoded (unknown type, damaged) is dead-lettered with the reason. ``handle`` gets the
    decoded batch (its dispatch is ``handlers.dispatch``)."""

    async def decode(msg: Msg) -> EventEnvelope:
        type_name = subjects.event_type_of(msg.subject)
        if type_name not in handlers.types:
            raise NotHandled(type_name)  # delivered before the durable's filter was narrowed: acked, not read
        return await deps.codec.from_wire(msg.data, handlers.decrypted(type_name))

    return consumer_router(
        deps,
        service=service,
        subject=handlers.filter_subjects(),
        stream=LOG_JSTREAM,
        decode=decode,
        handle=handle,
        title=title,
        batch_size=batch_size,
    )
