"""Log set-up of every process: plain lines for a terminal, or one JSON object a line for a log pipeline.

``MNEMO_OBSERVE__LOG_FORMAT=json`` (python-json-logger's formatter) gives every line ``time`` (UTC, ISO 8601),
``level``, ``logger``, ``message``, ``service``, ``replica``, ``trace_id`` and ``span_id``, plus what the call
passed as ``extra`` (a dead letter's ``event_id``, ``reason_category``...). The context is ours
(:class:`LogContext`): the service is the one of the logger's module (``mnemo.services.<name>``, a broker's
``mnemo.broker.<name>``: several share a process in ``make run``), else the process's; trace and span ids are
the current OpenTelemetry span's, unless the call names a message's own (``extra={"trace_id": ...}``).
"""

from __future__ import annotations

import functools
import logging
import os
import socket
from typing import Any

from opentelemetry import trace
from pythonjsonlogger.json import JsonFormatter

from mnemo.shared.settings import ObserveSettings, read_section

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: Per-message logs of FastStream and the drivers are noise at INFO.
NOISY = ("faststream", "mnemo.broker", "nats", "pymongo", "httpx")


@functools.lru_cache(maxsize=512)
def service_of(logger: str) -> str | None:
    """The service a logger belongs to: ``mnemo.services.memory_extractor.x`` -> ``memory-extractor``."""
    parts = logger.split(".")
    if parts[:2] in (["mnemo", "services"], ["mnemo", "broker"]) and len(parts) > 2:
        return parts[2].replace("_", "-")
    return None


class LogContext(logging.Filter):
    """Puts ``service``, ``replica``, ``trace_id`` and ``span_id`` on every record (what the call gave wins)."""

    def __init__(self, service: str, replica: str) -> None:
        super().__init__()
        self.service, self.replica = service, replica

    def filter(self, record: logging.LogRecord) -> bool:
        values = record.__dict__
        if "service" not in values:
            record.service = service_of(record.name) or self.service
        record.replica = self.replica
        if "trace_id" not in values:
            context = trace.get_current_span().get_span_context()
            record.trace_id = format(context.trace_id, "032x") if context.is_valid else None
            record.span_id = format(context.span_id, "016x") if context.is_valid else None
        return True


def json_formatter() -> logging.Formatter:
    return JsonFormatter(
        "%(levelname)s %(name)s %(message)s %(service)s %(replica)s %(trace_id)s %(span_id)s",
        rename_fields={"levelname": "level", "name": "logger", "exc_info": "exception"},
        timestamp="time",
        json_ensure_ascii=False,
    )


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler :func:`configure` installs (replaced when it is called again)."""


def configure(service: str, settings: ObserveSettings | None = None, level: int = logging.INFO) -> None:
    """The root logger's handler (stderr) in the format asked for, the noisy libraries at WARNING. Like
    ``logging.basicConfig``, it leaves a root logger that has handlers of someone else's (a test runner's)."""
    settings = settings or ObserveSettings()
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
    if not root.handlers:
        handler = _Handler()
        if settings.log_format == "json":
            handler.setFormatter(json_formatter())
            handler.addFilter(LogContext(service, settings.replica or socket.gethostname()))
        else:
            handler.setFormatter(logging.Formatter(TEXT_FORMAT))
        root.addHandler(handler)
        root.setLevel(level)
    for noisy in NOISY:
        logging.getLogger(noisy).setLevel(logging.WARNING)


def extra_of(**fields: Any) -> dict[str, Any]:
    """``extra`` for a log call, leaving out what is None (a message without a trace id keeps the span's)."""
    return {k: v for k, v in fields.items() if v is not None}


def configure_logging(level: int = logging.INFO, service: str | None = None) -> None:
    """Plain lines, or JSON lines with ``MNEMO_OBSERVE__LOG_FORMAT=json``. Here, not in ``bootstrap``: the ``mnemo``
    command line configures logging too, and an operator's command must not import the whole stack to start."""
    name = service or os.environ.get("MNEMO_SERVICE_NAME", "mnemo")
    configure(name, read_section("observe", ObserveSettings), level)
