"""Broker construction, shared by every service."""

from __future__ import annotations

import logging

from faststream.nats import JStream, NatsBroker
from faststream.nats.opentelemetry import NatsTelemetryMiddleware

from shared import subjects
from shared.settings import Settings
from shared.streams import ensure_streams
from shared.telemetry import tracer_provider

# FastStream binds to these streams; ensure_streams() declares them with the full configuration.
CHAT_JSTREAM = JStream(subjects.CHAT_STREAM, subjects=list(subjects.CHAT_STREAM_SUBJECTS), declare=False)
LOG_JSTREAM = JStream(subjects.LOG_STREAM, subjects=list(subjects.LOG_STREAM_SUBJECTS), declare=False)


def make_broker(settings: Settings, service: str) -> NatsBroker:
    """A broker for one service: its own connection name, telemetry middleware, quiet per-message logs."""
    return NatsBroker(
        settings.nats_url,
        name=f"mnemo-{service}",
        middlewares=[NatsTelemetryMiddleware(tracer_provider=tracer_provider(service, settings.telemetry))],
        logger=logging.getLogger(f"mnemo.{service}"),
        log_level=logging.DEBUG,
        # Graceful shutdown: in-flight handlers get this long to finish before the connection closes.
        graceful_timeout=30.0,
        max_reconnect_attempts=-1,
    )


__all__ = ["CHAT_JSTREAM", "LOG_JSTREAM", "ensure_streams", "make_broker"]
