"""Broker construction, shared by every service."""

from __future__ import annotations

import functools
import logging
from typing import Any

import nats.errors
from faststream.nats import JStream, NatsBroker
from faststream.nats.opentelemetry import NatsTelemetryMiddleware
from faststream.nats.security import NatsSecurity, NatsUserPassword
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig
from nats.js.errors import NotFoundError

from mnemo.shared import subjects
from mnemo.shared.broker_metrics import broker_metrics
from mnemo.shared.natsconn import connect_options
from mnemo.shared.settings import Settings
from mnemo.shared.streams import ensure_streams
from mnemo.shared.telemetry import tracer_provider

log = logging.getLogger(__name__)


def _fetch_raising_nats_timeouts() -> None:
    """Compatibility shim for FastStream 0.7.8 batch pull consumers with nats-py 2.16.

    FastStream's batch loop keeps fetching until the batch is full and stops on ``nats.errors.TimeoutError``,
    but nats-py's ``fetch`` raises a plain ``TimeoutError`` when nothing more arrives. The loop's
    task then dies with the partial batch fetched but never handled: those messages wait for ``ack_wait``
    to be redelivered (30 s), and FastStream's supervisor restarts the task and logs on every poll. Raising
    nats' subclass instead is invisible to every other caller (it still is a ``TimeoutError``).
    Covered by tests/integration/test_partial_batches.py.
    """
    fetch = JetStreamContext.PullSubscription.fetch
    if getattr(fetch, "_mnemo_shim", False):
        return

    @functools.wraps(fetch)
    async def patched(self: JetStreamContext.PullSubscription, batch: int = 1, *args: Any, **kwargs: Any) -> list[Msg]:
        try:
            return _top_up(self, await fetch(self, batch, *args, **kwargs), batch)
        except nats.errors.TimeoutError:
            raise
        except TimeoutError as exc:
            raise nats.errors.TimeoutError from exc

    patched._mnemo_shim = True  # type: ignore[attr-defined]
    JetStreamContext.PullSubscription.fetch = patched  # type: ignore[method-assign]


def _top_up(sub: JetStreamContext.PullSubscription, msgs: list[Msg], batch: int) -> list[Msg]:
    """``msgs`` plus the messages already delivered to ``sub`` but still queued, up to ``batch``.

    nats-py's fetch stops collecting at its deadline (FastStream passes the pull timeout, 50 ms), measured
    from the fetch's start: when the event loop was busy with a batch in flight meanwhile, it returns a
    fraction of the messages the server already sent (bench-ingest saw batches of 1, 2 and 220 of 1,024), and
    each small batch costs a whole round of log and read-model writes. Those messages wait in the
    subscription's queue for the next fetch, which takes them first; taking them now is the same order,
    sooner. Status messages (a pull request's "no messages" or timeout) are dropped, as nats-py's own
    fetch drops queued ones."""
    inner = getattr(sub, "_sub", None)
    queue = getattr(inner, "_pending_queue", None)
    if inner is None or queue is None:  # not nats-py 2.16's layout: leave the batch as fetched
        return msgs
    while len(msgs) < batch and not queue.empty():
        msg = queue.get_nowait()
        inner._pending_size -= len(msg.data)
        if not JetStreamContext.is_status_msg(msg):
            msgs.append(msg)
    return msgs


_fetch_raising_nats_timeouts()

# FastStream binds to these streams; ensure_streams() declares them with the full configuration.
CHAT_JSTREAM = JStream(subjects.CHAT_STREAM, subjects=list(subjects.CHAT_STREAM_SUBJECTS), declare=False)
LOG_JSTREAM = JStream(subjects.LOG_STREAM, subjects=list(subjects.LOG_STREAM_SUBJECTS), declare=False)


def broker_options(settings: Settings, identity: str) -> dict[str, Any]:
    """``mnemo.shared.natsconn.connect_options`` in FastStream's terms: user, password and TLS as its ``security``."""
    options = connect_options(settings, identity)
    user, password, tls = options.pop("user", None), options.pop("password", None), options.pop("tls", None)
    if user is not None:
        options["security"] = NatsUserPassword(user, password, ssl_context=tls)
    elif tls is not None:
        options["security"] = NatsSecurity(ssl_context=tls)
    return options


#: Graceful shutdown: in-flight handlers get this long to finish before the connection closes (the Helm chart's
#: terminationGracePeriodSeconds is longer: tests/chart).
GRACEFUL_TIMEOUT_S = 30.0


def make_broker(settings: Settings, service: str) -> NatsBroker:
    """A broker for one service: its own connection name and NATS user (``mnemo.shared.natsconn``), telemetry
    and Prometheus middlewares (``mnemo.shared.broker_metrics``), quiet per-message logs."""
    return NatsBroker(
        settings.nats_servers,
        **broker_options(settings, service),
        name=f"mnemo-{service}",
        middlewares=[
            NatsTelemetryMiddleware(tracer_provider=tracer_provider(service, settings.telemetry)),
            broker_metrics(service),
        ],
        # FastStream logs each message and its task supervision at INFO/DEBUG: keep that under "mnemo.broker"
        # so configure_logging can quiet it without hiding the services' own logs.
        logger=logging.getLogger(f"mnemo.broker.{service}"),
        log_level=logging.DEBUG,
        graceful_timeout=GRACEFUL_TIMEOUT_S,
        max_reconnect_attempts=-1,
    )


# The durable settings a deployment may change between versions; JetStream lets an existing durable take
# new values for these (the deliver policy, for one, is fixed at creation).
_EDITABLE = ("max_ack_pending", "ack_wait", "max_deliver")


def filters_of(config: ConsumerConfig) -> list[str]:
    """The subjects a durable's configuration filters, in either form (``filter_subject`` or the several
    ``filter_subjects`` of nats-server 2.10 and later), sorted."""
    return sorted(config.filter_subjects or ([config.filter_subject] if config.filter_subject else []))


def _wanted_filters(sub: Any, config: ConsumerConfig) -> list[str]:
    """What this version's subscriber filters: its ``filter_subjects``, else its one subject."""
    if config.filter_subjects:
        return sorted(config.filter_subjects)
    subject = getattr(getattr(sub, "subject", None), "template", None) or ""
    return [subject] if subject else []


async def update_durables(broker: NatsBroker) -> None:
    """Give the durables that already exist the settings and the filter this version subscribes with.

    FastStream (through nats-py's ``pull_subscribe``) binds to an existing durable as it is, so a durable
    created by an older version kept its old settings: e.g. JetStream's default ``max_ack_pending`` of
    1,000 below today's 1,024-message batches, which stops the next fetch until the previous batch is acked,
    or the log consumers' ``mnemo.log.>`` from before they filtered the event types they handle (docs/
    operations.md, "Changing a durable's filter"). The durable keeps its position: what it delivered and
    acked stays so, and messages still pending that the new filter leaves out are acked unread by the consumer
    (``NotHandled``). Durables that do not exist yet are left to FastStream, which creates them so."""
    js = broker.config.connection_state.connection.jetstream()
    for sub in broker.subscribers:
        config: ConsumerConfig | None = getattr(sub, "config", None)
        stream = getattr(getattr(sub, "stream", None), "name", None)
        if config is None or not config.durable_name or not stream:
            continue
        try:
            current = (await js.consumer_info(stream, config.durable_name)).config
        except NotFoundError:
            continue
        wanted = {f: getattr(config, f) for f in _EDITABLE if getattr(config, f) is not None}
        changed: dict[str, Any] = {f: v for f, v in wanted.items() if getattr(current, f) != v}
        filters = _wanted_filters(sub, config)
        if filters and filters != filters_of(current):
            # One subject goes in ``filter_subject`` (the form nats-py creates), several in ``filter_subjects``.
            one = len(filters) == 1
            changed |= {"filter_subject": filters[0] if one else None, "filter_subjects": None if one else filters}
        if changed:
            await js.add_consumer(stream, config=current.evolve(**changed))
            log.info("durable %s on %s updated: %s", config.durable_name, stream, changed)


async def start_broker(broker: NatsBroker) -> None:
    """Start ``broker`` and return only once the server has registered its subscriptions.

    Existing durables get this version's settings first (``update_durables``). ``broker.start()`` sends the
    SUB protocol lines but does not wait for the server to process them; a request sent right after (a
    readiness probe, a test, the demo) could get "no responders". NATS handles a connection's protocol in
    order, so a completed PING/PONG flush proves every earlier SUB is in place.
    """
    await broker.connect()
    await update_durables(broker)
    await broker.start()
    await broker.config.connection_state.connection.flush()


__all__ = ["CHAT_JSTREAM", "LOG_JSTREAM", "ensure_streams", "make_broker", "start_broker"]
