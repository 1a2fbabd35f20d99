"""JSON log lines (MNEMO_OBSERVE__LOG_FORMAT=json): service, replica, trace and span id on every line, a
dead letter's reason and event id; plain text stays the default."""

from __future__ import annotations

import io
import json
import logging

import pytest
from opentelemetry.sdk.trace import TracerProvider
from pythonjsonlogger.json import JsonFormatter

from mnemo.shared import logs
from mnemo.shared.delivery.dead_letters import REASON_CATEGORIES, reason_category
from mnemo.shared.settings import ObserveSettings


def json_lines(service: str, replica: str, emit) -> list[dict]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logs.json_formatter())
    handler.addFilter(logs.LogContext(service, replica))
    logger = logging.getLogger("mnemo")
    logger.addHandler(handler)
    try:
        emit()
    finally:
        logger.removeHandler(handler)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_every_line_names_its_service_replica_and_the_current_span():
    tracer = TracerProvider().get_tracer("test")

    def emit() -> None:
        logging.getLogger("mnemo.services.memory_extractor.facts").warning("no facts in %d turns", 3)
        with tracer.start_as_current_span("handling") as span:
            logging.getLogger("mnemo.stack").warning("inside")
            emit.span = span  # type: ignore[attr-defined]

    first, second = json_lines("stack", "stack-1", emit)
    assert first["service"] == "memory-extractor", "the logger's service, not the process's"
    assert (first["message"], first["level"], first["replica"]) == ("no facts in 3 turns", "WARNING", "stack-1")
    assert first["trace_id"] is None
    assert "T" in first["time"]
    context = emit.span.get_span_context()  # type: ignore[attr-defined]
    assert second["service"] == "stack"
    assert second["trace_id"] == format(context.trace_id, "032x")
    assert second["span_id"] == format(context.span_id, "016x")


def test_a_dead_letter_logs_its_reason_and_event_id_as_fields():
    def emit() -> None:
        logging.getLogger("mnemo.shared.delivery.dead_letters").warning(
            "dead-lettered", extra={"event_id": "ev-1", "reason_category": "refused", "trace_id": "ab" * 16}
        )

    [line] = json_lines("ingest", "ingest-2", emit)
    assert (line["event_id"], line["reason_category"], line["trace_id"]) == ("ev-1", "refused", "ab" * 16)


def test_an_exception_is_one_field_of_one_line():
    def emit() -> None:
        try:
            raise ValueError("bad")
        except ValueError:
            logging.getLogger("mnemo.x").exception("failed")

    [line] = json_lines("lore", "lore-1", emit)
    assert "ValueError: bad" in line["exception"]


def test_text_stays_the_default_json_on_request_and_a_test_runners_handlers_are_left_alone(
    monkeypatch: pytest.MonkeyPatch,
):
    assert ObserveSettings().log_format == "text"
    root = logging.getLogger()
    monkeypatch.setattr(root, "level", root.level)
    monkeypatch.setattr(root, "handlers", [])
    logs.configure("x", ObserveSettings(log_format="json"))
    [ours] = root.handlers
    assert isinstance(ours.formatter, JsonFormatter)
    logs.configure("x", ObserveSettings())  # again: replaces its own handler
    [ours] = root.handlers
    assert not isinstance(ours.formatter, JsonFormatter)
    foreign = logging.NullHandler()
    root.handlers = [foreign]
    logs.configure("x", ObserveSettings(log_format="json"))
    assert root.handlers == [foreign]


@pytest.mark.parametrize(
    ("reason", "category"),
    [
        (
            "invalid payload: InvalidMessage: message_too_large: 2000000 bytes, over the tenant's 1048576",
            "message_too_large",
        ),
        ("invalid payload: InvalidMessage: unknown subject 'mnemo.chat.x.v1'; ingest accepts ...", "unknown_subject"),
        ("invalid payload: InvalidMessage: MessageCreated rejected: content: Field required", "invalid_payload"),
        ("invalid summary.created payload: 1 validation error", "invalid_payload"),
        ("failed 5 times, last: ConnectionError: store unavailable", "retries_exhausted"),
        ("cannot edit message 'm-4': it was deleted", "refused"),
    ],
)
def test_dead_letter_reasons_fall_into_a_closed_set_of_categories(reason: str, category: str):
    assert reason_category(reason) == category
    assert category in REASON_CATEGORIES
