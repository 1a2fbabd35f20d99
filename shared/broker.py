"""Broker construction, shared by every service."""

from __future__ import annotations

import functools
import logging
from typing import Any

import nats.errors
from faststream.nats import JStream, NatsBroker
from faststream.nats.opentelemetry import NatsTelemetryMiddleware
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from shared import subjects
from shared.settings import Settings
from shared.streams import ensure_streams
from shared.telemetry import tracer_provider


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
    async def patched(self: JetStreamContext.PullSubscription, *args: Any, **kwargs: Any) -> list[Msg]:
        try:
            return await fetch(self, *args, **kwargs)
        except nats.errors.TimeoutError:
            raise
        except TimeoutError as exc:
            raise nats.errors.TimeoutError from exc

    patched._mnemo_shim = True  # type: ignore[attr-defined]
    JetStreamContext.PullSubscription.fetch = patched  # type: ignore[method-assign]


_fetch_raising_nats_timeouts()

# FastStream binds to these streams; ensure_streams() declares them with the full configuration.
CHAT_JSTREAM = JStream(subjects.CHAT_STREAM, subjects=list(subjects.CHAT_STREAM_SUBJECTS), declare=False)
LOG_JSTREAM = JStream(subjects.LOG_STREAM, subjects=list(subjects.LOG_STREAM_SUBJECTS), declare=False)


def make_broker(settings: Settings, service: str) -> NatsBroker:
    """A broker for one service: its own connection name, telemetry middleware, quiet per-message logs."""
    return NatsBroker(
        settings.nats_url,
        name=f"mnemo-{service}",
        middlewares=[NatsTelemetryMiddleware(tracer_provider=tracer_provider(service, settings.telemetry))],
        # FastStream logs each message and its task supervision at INFO/DEBUG: keep that under "mnemo.broker"
        # so configure_logging can quiet it without hiding the services' own logs.
        logger=logging.getLogger(f"mnemo.broker.{service}"),
        log_level=logging.DEBUG,
        # Graceful shutdown: in-flight handlers get this long to finish before the connection closes.
        graceful_timeout=30.0,
        max_reconnect_attempts=-1,
    )


async def start_broker(broker: NatsBroker) -> None:
    """Start ``broker`` and return only once the server has registered its subscriptions.

    ``broker.start()`` sends the SUB protocol lines but does not wait for the server to process them; a
    request sent right after (a readiness probe, a test, the demo) could get "no responders". NATS handles
    a connection's protocol in order, so a completed PING/PONG flush proves every earlier SUB is in place.
    """
    await broker.start()
    await broker.config.connection_state.connection.flush()


__all__ = ["CHAT_JSTREAM", "LOG_JSTREAM", "ensure_streams", "make_broker", "start_broker"]
