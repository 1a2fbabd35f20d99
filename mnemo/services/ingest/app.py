"""Ingest wiring: every replica active, each consuming its share of the chat stream's partitions.

The MNEMO_CHAT stream maps keyed chat events (``mnemo.chat.<entity>.<fact>.v2.<tenant>.<key>``) into
``streams.ingest_partitions`` partitions by tenant and key (mnemo/shared/partitions.py); v1 events reach the same
partitions through the v1 router (``v1_router.py``). One durable and one lease per partition; the replicas deal
the partitions and the router among themselves (``partitions.py``), so one conversation is recorded by one
replica at a time, in the order it was published, and replicas never race each other's appends.

Per partition, ack policy as before: manual, via ``BatchConsumer`` (ack after the append is durable and
projected; invalid payloads and refused commands to ``mnemo.dlq.ingest.v1`` with the reason; failures naked with
backoff, then dead-lettered); ``delivery.ingest_batch_size`` (1,024) messages per pull. The handler is staged
(``Staged``): a batch is decided and appended in delivery order, then projected and published while the next
batch is decided (``delivery.pipeline_depth`` batches at once). Ordered (``mnemo.shared.delivery.order``): a batch
begins only after every earlier message of its partition is acked or begun here, so a redelivery after a crash
never lets a later message of a conversation overtake an earlier one.
"""

from __future__ import annotations

from faststream.nats import NatsRouter

from mnemo.services.ingest.partitions import SERVICE, PartitionManager
from mnemo.shared.bootstrap import ServiceDefinition
from mnemo.shared.deps import Deps
from mnemo.shared.readmodels.catalog import CONVERSATIONS


def create_router(deps: Deps) -> NatsRouter:
    """The partitions are consumed once the broker serves (``Deps.on_started``) and let go before it stops
    (``Deps.on_stopping``)."""
    manager = PartitionManager(deps, deps.read_model(CONVERSATIONS))
    deps.on_started.append(manager.start)
    deps.on_stopping.append(manager.stop)
    if deps.probes is not None:  # its durables are no broker subscribers: it reports them itself
        deps.probes.add_check("partitions", manager.readiness)
        deps.probes.add_collector(manager.collect)
    return NatsRouter()


DEFINITION = ServiceDefinition(SERVICE, create_router, read_models=(CONVERSATIONS,))
