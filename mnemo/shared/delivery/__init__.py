"""Delivery semantics for JetStream batch consumers, the same in every service.

- Explicit acks: a message is acked only after its effect is durable.
- Invalid payloads (undecodable, failing validation) go to the service's dead-letter subject with the
  reason at once; they never block the rest of the batch.
- A handler failure naks the batch with a growing delay; a message that has failed ``max_deliver`` times
  goes to the dead-letter subject with the last error instead (poison message).
- Long work sends ``in_progress`` heartbeats so JetStream does not redeliver it mid-flight.
- A dead letter is acked only once the dead-letter publish itself is acknowledged, so none is lost.
- Each message gets its own CONSUMER span, child of the trace context in its headers: FastStream's
  middleware opens one new trace per *batch* (with links only), which would cut a message's path across the
  services into several traces. Handlers carry ``Item.traceparent`` into what they produce.
- A ``Staged`` handler overlaps consecutive batches (pipelining). Its first stage runs batch after batch in
  delivery order, inside the fetch loop: the next batch is fetched only once it is done. The completion it
  returns (e.g. projections, publishing, then the acks) runs in the background, completions one after
  another in delivery order, while the next batch goes through its first stage; at most ``in_flight``
  batches are held at once (backpressure: the fetch loop waits for a free slot). A failing first stage is
  isolated message by message right there, after every earlier completion, so the retries keep their order
  before the next batch. The subscriber's graceful shutdown waits for the background completions too.
"""

from mnemo.shared.delivery.consumer import BatchConsumer
from mnemo.shared.delivery.dead_letters import (
    DLQ_ATTEMPTS,
    DLQ_REASON,
    DLQ_SERVICE,
    DLQ_SUBJECT,
    DeadLetters,
    heartbeat,
    retry_delay,
)
from mnemo.shared.delivery.subscribe import subscribe_batches
from mnemo.shared.delivery.types import (
    TRACEPARENT,
    BatchHandler,
    Completion,
    Decoder,
    InvalidMessage,
    Item,
    NotHandled,
    Rejection,
    Staged,
    traceparent_of,
)

__all__ = [
    "DLQ_ATTEMPTS",
    "DLQ_REASON",
    "DLQ_SERVICE",
    "DLQ_SUBJECT",
    "TRACEPARENT",
    "BatchConsumer",
    "BatchHandler",
    "Completion",
    "DeadLetters",
    "Decoder",
    "InvalidMessage",
    "Item",
    "NotHandled",
    "Rejection",
    "Staged",
    "heartbeat",
    "retry_delay",
    "subscribe_batches",
    "traceparent_of",
]
