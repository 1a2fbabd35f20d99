"""What a process's ``/readyz`` checks and what its ``/metrics`` reads from JetStream (:mod:`mnemo.shared.probes`).

- ``nats``: the connection is up; ``jetstream``: the JetStream API answers (a stream's info, one the
  process's NATS user may read); ``mongodb``: a ``ping`` answers.
- ``consumers``: every broker runs and each of its subscribers (durables, RPC subscriptions) is started.
- ``vectors``: the vector index is open; a stream-mode shard (the context-assembler's) is ready once it has
  applied the points stream up to the sequence it found at its first check, so a new replica is not ready
  while it catches up.
- Before each scrape, the durables this process consumes are read (``consumer_info``): pending and
  ack-pending counts, the figures KEDA's ``nats-jetstream`` scaler reads. Every replica of a service reports
  the same durable: aggregate with ``max by (stream, durable)``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from faststream.nats import NatsBroker
from nats.aio.client import Client as NatsClient
from nats.js.errors import NotFoundError
from pymongo.asynchronous.database import AsyncDatabase

from mnemo.shared import subjects
from mnemo.shared.metrics import CONSUMER_ACK_PENDING, CONSUMER_PENDING, CONSUMER_REDELIVERED
from mnemo.shared.probes import CHECK_TIMEOUT_S, NotReady, Probes
from mnemo.shared.tasks import retrieve_outcome
from mnemo.shared.vectors.follower import PointsFollower
from mnemo.shared.vectors.port import VectorIndex


def watch_nats(probes: Probes, nc: NatsClient, *, stream: str = subjects.DLQ_STREAM) -> None:
    """``stream``: the one whose info proves JetStream answers (the process's NATS user may read it)."""

    async def connected() -> str:
        if not nc.is_connected:
            raise NotReady("not connected" + (", reconnecting" if nc.is_reconnecting else ""))
        url = nc.connected_url
        return f"{url.hostname}:{url.port}" if url is not None else ""

    async def jetstream() -> str:
        try:
            await nc.jetstream(timeout=CHECK_TIMEOUT_S).stream_info(stream)
        except NotFoundError:  # JetStream answered: the stream is simply not there yet
            return f"{stream} not created yet"
        return ""

    probes.add_check("nats", connected)
    probes.add_check("jetstream", jetstream)


def watch_mongodb(probes: Probes, db: AsyncDatabase[dict[str, Any]]) -> None:
    """One ``ping`` at a time, never cancelled: a probe that gives up after its 2 s stops waiting for the ping, not
    the ping itself. Cancelling the driver's operations, as a probe asked every fraction of a second during a
    database outage did, left a process whose pings no longer answered after the database came back (1 run in
    3 of tests/integration/test_cluster_observe.py on a loaded machine, 2026-11-28); the ping in flight now ends
    on its own, answered or timed out by the driver's server selection, and the next probe starts another."""
    in_flight: asyncio.Future[Any] | None = None

    async def ping() -> str:
        nonlocal in_flight
        if in_flight is None or in_flight.done():
            in_flight = asyncio.ensure_future(db.command("ping"))
            in_flight.add_done_callback(retrieve_outcome)
        await asyncio.shield(in_flight)
        return ""

    probes.add_check("mongodb", ping)


def watch_brokers(probes: Probes, brokers: Sequence[NatsBroker]) -> None:
    """The brokers' subscribers started (checked once they should be: after ``start_broker``)."""

    async def started() -> str:
        subscribers = 0
        for broker in brokers:
            connection = broker.config.connection_state.connection if broker.running else None
            if connection is None or not connection.is_connected:
                raise NotReady("a broker is not running or not connected")
            stopped = [s for s in broker.subscribers if not getattr(s, "running", True)]
            if stopped:
                raise NotReady(f"{len(stopped)} subscriber(s) not started")
            subscribers += len(broker.subscribers)
        return f"{subscribers} subscriber(s)"

    probes.add_check("consumers", started)
    for broker in brokers:
        probes.add_collector(_consumer_gauges(broker))


def watch_vectors(probes: Probes, index: VectorIndex, follower: PointsFollower | None) -> None:
    target: int | None = None
    caught_up = False

    async def shard() -> str:
        nonlocal target, caught_up
        if follower is None:
            return type(index).__name__
        if not caught_up:
            target = target if target is not None else await follower.last_sequence()
            if follower.applied < target:
                raise NotReady(f"the shard is catching up: stream sequence {follower.applied} of {target}")
            caught_up = True
        return f"shard at stream sequence {follower.applied}"

    probes.add_check("vectors", shard)


def durables_of(broker: NatsBroker) -> list[tuple[str, str]]:
    """(stream, durable) of every durable subscriber of ``broker``."""
    found = []
    for sub in broker.subscribers:
        config = getattr(sub, "config", None)
        stream = getattr(getattr(sub, "stream", None), "name", None)
        durable = getattr(config, "durable_name", None)
        if stream and durable:
            found.append((str(stream), str(durable)))
    return found


def _consumer_gauges(broker: NatsBroker) -> Any:
    async def collect() -> None:
        if not broker.running:
            return
        js = broker.config.connection_state.connection.jetstream(timeout=CHECK_TIMEOUT_S)
        for stream, durable in durables_of(broker):
            info = await js.consumer_info(stream, durable)
            CONSUMER_PENDING.labels(stream=stream, durable=durable).set(info.num_pending or 0)
            CONSUMER_ACK_PENDING.labels(stream=stream, durable=durable).set(info.num_ack_pending or 0)
            CONSUMER_REDELIVERED.labels(stream=stream, durable=durable).set(info.num_redelivered or 0)

    return collect
