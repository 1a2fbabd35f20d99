"""Ingest wiring: ONE durable JetStream batch consumer on every inbound chat subject.

Subject ``mnemo.chat.>`` on stream MNEMO_CHAT, durable ``mnemo_ingest_main`` shared by all replicas (pull
consumer: JetStream spreads batches across them). Ack policy: manual, via ``BatchConsumer`` (ack after the
append is durable and projected; invalid payloads and refused commands to ``mnemo.dlq.ingest.v1`` with the
reason; failures naked with backoff, then dead-lettered); ``delivery.ingest_batch_size`` (1,024) messages per
pull. The handler is staged (``Staged``): a batch is decided and appended in delivery order, then projected
and published while the next batch is decided (``delivery.pipeline_depth`` batches at once). Ordered
(``mnemo.shared.delivery.order``): with several replicas a batch begins only after every earlier chat message is
acked or begun by the same replica, so each conversation is recorded in the order the platform published it.
"""

from __future__ import annotations

from faststream.nats import NatsRouter
from nats.aio.msg import Msg

from mnemo.services.ingest.domain import InboundCommand
from mnemo.services.ingest.handlers import IngestHandler, decode_command
from mnemo.services.ingest.recorder import Recorder
from mnemo.shared import subjects
from mnemo.shared.bootstrap import ServiceDefinition
from mnemo.shared.broker import CHAT_JSTREAM
from mnemo.shared.consumers import consumer_router
from mnemo.shared.delivery import Staged
from mnemo.shared.deps import Deps
from mnemo.shared.readmodels.catalog import CONVERSATIONS
from mnemo.shared.readmodels.ports import ConversationReadModel

SERVICE = "ingest"


def create_router(deps: Deps, *, read_models: ConversationReadModel | None = None) -> NatsRouter:
    """``read_models``: the projection to use instead of the MongoDB one (component tests)."""
    models = read_models or deps.read_model(CONVERSATIONS)
    handler = IngestHandler(Recorder(deps.store, models, deps.publisher))

    def decode(msg: Msg) -> InboundCommand:
        return decode_command(msg.subject, msg.data, deps.settings.limits)

    return consumer_router(
        deps,
        service=SERVICE,
        subject=subjects.CHAT_STREAM_SUBJECTS[0],
        stream=CHAT_JSTREAM,
        decode=decode,
        handle=Staged(handler.begin),
        title="ingest: platform chat events into the event log",
        batch_size=deps.settings.delivery.ingest_batch_size,
        ordered=True,
    )


# Single active: a shared durable would interleave deliveries across replicas (mnemo/shared/lease.py).
DEFINITION = ServiceDefinition(SERVICE, create_router, single_active=True, read_models=(CONVERSATIONS,))
