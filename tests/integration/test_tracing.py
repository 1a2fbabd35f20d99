"""One chat message's path across the services is one trace: the platform's, or a new one ingest starts.

Real nats-server and SecantusDB; ingest, embedding and memory-extractor run on them (the relay publishes the
log events with raw nats-py). Each service's tracer provider gets an in-memory exporter, and the per-message
consumer spans are checked for their trace ids and parent links:

    platform span -> ingest (chat message) -> embedding (message.recorded)
                                           -> memory-extractor (message.recorded)
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from mnemo.services.embedding import app as embedding
from mnemo.services.ingest import app as ingest
from mnemo.services.memory_extractor import app as memory_extractor
from mnemo.shared import subjects
from mnemo.shared.events.recorded import MESSAGE_RECORDED
from mnemo.shared.partitions import ingest_drained
from mnemo.shared.settings import TelemetrySettings
from mnemo.shared.telemetry import shutdown_all, tracer_provider
from tests.fakes.embedders import ConstantEmbedder
from tests.integration.ingest_stack import Stack, drained, message_created, running_with_vectors
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
PLATFORM_SPAN_ID = 0x00F067AA0BA902B7
TRACEPARENT = f"00-{TRACE_ID:032x}-{PLATFORM_SPAN_ID:016x}-01"
DIMENSIONS = 8


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Every span the services under test record, kept in memory (production exporters untouched)."""
    exporter = InMemorySpanExporter()
    for service in (ingest.SERVICE, embedding.SERVICE, memory_extractor.SERVICE):
        tracer_provider(service, TelemetrySettings()).add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter
    shutdown_all()  # drop the providers holding this exporter; later tests get fresh ones


@pytest.fixture
async def stack(nats_url: str, mongo_url: str, db_name: str, tmp_path: Path) -> AsyncIterator[Stack]:
    routers = [ingest.create_router, embedding.create_router, memory_extractor.create_router]
    embedder = ConstantEmbedder(DIMENSIONS, "constant-test")  # the vectors do not matter here
    async with running_with_vectors(nats_url, mongo_url, db_name, routers, tmp_path, embedder) as s:
        yield s


def created(message_id: str) -> bytes:
    content = f"The dragon sleeps under the old mill ({message_id})."
    return json.dumps(message_created(message_id, content, datetime(2024, 5, 1, 12, 0, tzinfo=UTC))).encode()


def consumer_spans(exporter: InMemorySpanExporter, service: str, subject: str) -> list[ReadableSpan]:
    name = f"{service} process {subject}"
    return [s for s in exporter.get_finished_spans() if s.name == name]


def one(spans: list[ReadableSpan], **attributes: Any) -> ReadableSpan:
    found = [s for s in spans if all(s.attributes and s.attributes.get(k) == v for k, v in attributes.items())]
    assert len(found) == 1, f"expected one span with {attributes}, got {[s.attributes for s in spans]}"
    return found[0]


def child_of(spans: list[ReadableSpan], parent: ReadableSpan) -> ReadableSpan:
    """The one span of ``spans`` whose parent is ``parent`` (same trace, direct child)."""
    assert parent.context is not None
    found = [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]
    assert len(found) == 1, f"expected one child of {parent.name}, got {len(found)}"
    assert found[0].context is not None
    assert found[0].context.trace_id == parent.context.trace_id
    return found[0]


async def settle(stack: Stack) -> None:
    """Until every consumer has handled everything, including what the log consumers derive (the
    memory-extractor's knowledge.witnessed): a pass that saw the log grow is
    done again."""
    await wait_until(lambda: ingest_drained(stack.js), "ingest")
    while True:
        before = (await stack.js.stream_info(subjects.LOG_STREAM)).state.last_seq
        for service in (embedding.SERVICE, memory_extractor.SERVICE):
            durable = subjects.durable(service)
            await wait_until(functools.partial(drained, stack.js, subjects.LOG_STREAM, durable), f"{service} drained")
        await asyncio.sleep(0.5)  # the relay publishes what the consumers appended
        if (await stack.js.stream_info(subjects.LOG_STREAM)).state.last_seq == before:
            return


async def test_one_message_is_one_trace_across_the_services(stack: Stack, spans: InMemorySpanExporter) -> None:
    await stack.js.publish(
        subjects.MESSAGE_CREATED, created("m1"), headers={"traceparent": TRACEPARENT, "Nats-Msg-Id": "chat-m1"}
    )
    await stack.js.publish(subjects.MESSAGE_CREATED, created("m2"), headers={"Nats-Msg-Id": "chat-m2"})
    await stack.js.publish(
        subjects.MESSAGE_CREATED, b"{not json", headers={"traceparent": TRACEPARENT, "Nats-Msg-Id": "chat-bad"}
    )
    await settle(stack)

    ingested = consumer_spans(spans, ingest.SERVICE, subjects.MESSAGE_CREATED)
    partitions = [s for s in spans.get_finished_spans() if s.name.startswith(f"{ingest.SERVICE} process mnemo.ingest.")]
    recorded_subject = subjects.log_subject(MESSAGE_RECORDED.name)
    embedded = consumer_spans(spans, embedding.SERVICE, recorded_subject)
    extracted = consumer_spans(spans, memory_extractor.SERVICE, recorded_subject)

    # The platform's trace: ingest continues it (its v1 router, then the conversation's partition, where the
    # router's keyed copy carries the router's span), every downstream consumer span hangs below ingest's.
    ingest1 = one(ingested, **{"messaging.message.id": "chat-m1"})
    assert ingest1.kind is SpanKind.CONSUMER
    assert ingest1.context is not None
    assert ingest1.context.trace_id == TRACE_ID
    assert ingest1.parent is not None
    assert ingest1.parent.span_id == PLATFORM_SPAN_ID
    assert ingest1.attributes is not None
    assert ingest1.attributes["messaging.system"] == "nats"
    recorded1 = child_of(partitions, ingest1)
    assert recorded1.name.startswith(f"{ingest.SERVICE} process {subjects.INGEST_PARTITIONS_PREFIX}.")
    assert "c1" not in recorded1.name  # a keyed subject's ids are no span name
    embed1 = child_of(embedded, recorded1)
    assert embed1.attributes is not None
    assert embed1.attributes["mnemo.event_id"] == embed1.attributes["messaging.message.id"]
    child_of(extracted, recorded1)
    # (No consumer handles knowledge.witnessed since the log consumers subscribe by event type: no span below.)

    # No trace context from the platform: ingest starts a new trace (a root span) that embedding continues.
    fresh = one(ingested, **{"messaging.message.id": "chat-m2"})
    assert fresh.parent is None
    assert fresh.context is not None
    assert fresh.context.trace_id != TRACE_ID
    fresh_recorded = child_of(partitions, fresh)
    child_of(embedded, fresh_recorded)
    child_of(extracted, fresh_recorded)

    # A dead-lettered message's span is in its trace too, with an error status saying why.
    bad = one(ingested, **{"messaging.message.id": "chat-bad"})
    assert bad.context is not None
    assert bad.context.trace_id == TRACE_ID
    assert bad.status.status_code is StatusCode.ERROR
    assert bad.status.description is not None
    assert bad.status.description.startswith("dead-lettered: invalid payload")

    for span in [ingest1, fresh, *partitions, *embedded, *extracted]:
        assert span.status.is_ok, f"{span.name}: {span.status.description}"
