"""Registering a batch consumer as a durable JetStream pull subscriber on a FastStream router."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from faststream import AckPolicy, Context, StreamMessage
from faststream.nats import JStream, NatsRouter, PullSub
from faststream.nats.message import NatsBatchMessage
from nats.js.api import ConsumerConfig, DeliverPolicy

from mnemo.shared.delivery.consumer import BatchConsumer
from mnemo.shared.delivery.types import T
from mnemo.shared.settings import DeliverySettings


async def _undecoded(message: StreamMessage[Any]) -> Any:
    """FastStream's own batch decoder JSON-parses every body whose content-type says JSON, and one bad body
    then fails the whole batch before the handler runs (never acked, never dead-lettered). Decoding is the
    consumer's job, message by message, so the framework hands the bodies over untouched."""
    return message.body


def max_ack_pending(delivery: DeliverySettings) -> int:
    """Unacked messages JetStream lets one durable hold: every batch a staged consumer keeps in flight, plus
    the one being fetched. Its default (1,000) is below one embedding or ingest batch (1,024): the next fetch
    then got nothing until the previous batch was acked, and the stages never overlapped."""
    return delivery.batch_size * (delivery.pipeline_depth + 1)


def subscribe_batches(
    router: NatsRouter,
    *,
    subject: str | Sequence[str],
    stream: JStream,
    durable: str,
    consumer: BatchConsumer[T],
    delivery: DeliverySettings,
    title: str,
    inbox_prefix: str = "_INBOX",
) -> None:
    """Register ``consumer`` as a durable JetStream pull consumer fetching batches of the messages on
    ``subject`` (one: the durable's ``filter_subject``; several: its ``filter_subjects``, so it is delivered
    those alone; ``mnemo.shared.broker.update_durables`` brings an existing durable's filter in line).

    ``inbox_prefix``: where its batches are delivered, the connection's own (``mnemo.shared.natsconn``): FastStream
    does not take the connection's but its own argument, ``_INBOX.`` by default, which a secured server denies.

    Replicas of a service share the durable, so JetStream spreads batches across them. The server-side
    ``max_deliver`` is a backstop above ours: our consumer dead-letters first, with the reason.
    """

    subjects = [subject] if isinstance(subject, str) else list(subject)
    if not subjects:
        raise ValueError(f"{durable}: a durable needs at least one subject")
    single = subjects[0] if len(subjects) == 1 else ""

    @router.subscriber(
        single,
        stream=stream,
        durable=durable,
        pull_sub=PullSub(batch_size=delivery.batch_size, timeout=0.05, batch=True),
        ack_policy=AckPolicy.MANUAL,
        inbox_prefix=f"{inbox_prefix}.".encode(),
        decoder=_undecoded,
        config=ConsumerConfig(
            ack_wait=delivery.ack_wait_s,
            max_deliver=delivery.max_deliver + 5,
            deliver_policy=DeliverPolicy.ALL,
            max_ack_pending=max_ack_pending(delivery),
            filter_subjects=[] if single else subjects,
        ),
        title=title,
    )
    async def on_batch(message: NatsBatchMessage = Context("message"), subscriber: Any = Context("handler_")) -> None:
        # The subscriber's graceful-shutdown lock: held by FastStream while this call runs, and by the
        # consumer until a staged batch's background completion is done, so ``broker.stop()`` waits for it.
        lock = getattr(subscriber, "lock", None)
        await consumer(message.raw_message, lock if isinstance(lock, AbstractContextManager) else None)
