"""The trace context an event carries: stored and relayed by the codec, published as a header by the relay.

Old documents (written before events carried one) decode with ``traceparent=None`` and untraced events keep
the document shape they always had.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from opentelemetry.sdk.trace import TracerProvider
from pydantic import BaseModel

from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore
from mnemo.shared.delivery import Item
from mnemo.shared.eventlog.codec import EventCodec
from mnemo.shared.eventlog.inmemory import InMemoryEventStore
from mnemo.shared.eventlog.relay import Outgoing, Relay
from mnemo.shared.events.envelope import EventEnvelope, EventRegistry, NewEvent
from tests.envelopes import numbered


class Note(BaseModel):
    text: str


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def codec() -> EventCodec:
    registry = EventRegistry()
    registry.register("note.taken", Note, encrypted=("text",))
    return EventCodec(registry, FieldCipher(bytes(range(32)), InMemoryKeyStore()))


def envelope(traceparent: str | None) -> EventEnvelope:
    return numbered("t1", "notes/t1", 1, "note.taken", {"text": "secret"}, T0, traceparent=traceparent)


async def test_codec_round_trips_the_traceparent_in_the_stored_and_wire_forms() -> None:
    c = codec()
    doc = await c.encode(envelope(TRACEPARENT))

    assert doc["traceparent"] == TRACEPARENT
    assert doc["payload"]["text"] != "secret"  # still encrypted; the trace context is metadata, in clear
    assert (await c.decode(doc)).traceparent == TRACEPARENT
    assert await c.from_wire(c.to_wire(doc)) == envelope(TRACEPARENT)


async def test_untraced_and_old_documents_have_no_traceparent() -> None:
    c = codec()
    doc = await c.encode(envelope(None))

    assert "traceparent" not in doc  # the shape documents had before tracing
    assert b"traceparent" not in c.to_wire(doc)
    assert (await c.decode(doc)).traceparent is None
    assert (await c.from_wire(c.to_wire(doc))).traceparent is None


class RecordingPublisher:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str | None]] = []

    async def publish_all(self, messages: Sequence[Outgoing]) -> list[BaseException | None]:
        self.sent += [(m.msg_id, m.traceparent) for m in messages]
        return [None] * len(messages)


async def test_relay_publishes_the_traceparent_on_the_fast_path_and_in_recovery() -> None:
    c = codec()
    store = InMemoryEventStore(c)
    events = [
        NewEvent(event_id="traced", type="note.taken", tenant_id="t1", traceparent=TRACEPARENT, payload={"text": "a"}),
        NewEvent(event_id="untraced", type="note.taken", tenant_id="t1", payload={"text": "b"}),
    ]
    result = await store.append("notes/t1", 0, events)
    assert [e.traceparent for e in result.committed] == [TRACEPARENT, None]

    fast = RecordingPublisher()
    await Relay(store, fast, c).publish_committed(result.committed)
    assert sorted(fast.sent) == [("traced", TRACEPARENT), ("untraced", None)]

    store.published.clear()  # as if the fast path's confirmation were lost
    recovery = RecordingPublisher()
    assert await Relay(store, recovery, c, min_age_s=0).recover_once() == 2
    assert sorted(recovery.sent) == [("traced", TRACEPARENT), ("untraced", None)]


def test_item_traceparent_is_its_span_context() -> None:
    assert Item("v", None).traceparent is None  # type: ignore[arg-type]  # no span: nothing to carry

    span = TracerProvider().get_tracer("test").start_span("work")
    ctx = span.get_span_context()
    item = Item("v", None, span)  # type: ignore[arg-type]

    assert item.traceparent == f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"
