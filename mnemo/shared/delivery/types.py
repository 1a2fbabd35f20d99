"""The values a batch consumer hands its handlers: decoded items with their spans, rejections, staged handlers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from nats.aio.msg import Msg
from opentelemetry import trace
from opentelemetry.trace import Span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

T = TypeVar("T")


class InvalidMessage(ValueError):
    """A message that can never be processed (bad payload, unknown type): dead-letter it at once."""


class NotHandled(Exception):
    """Raised by a decoder for a message this consumer does not handle (one delivered before its durable's
    filter was narrowed): acked as it is, nothing decoded."""


_PROPAGATOR = TraceContextTextMapPropagator()
TRACEPARENT = "traceparent"


@dataclass(frozen=True)
class Item(Generic[T]):
    """One decoded message of a batch, with the span its processing is recorded in."""

    value: T
    msg: Msg
    span: Span = trace.INVALID_SPAN

    @property
    def subject(self) -> str:
        return self.msg.subject

    @property
    def traceparent(self) -> str | None:
        """W3C ``traceparent`` of this message's span: what the events it produces carry, so downstream
        consumers continue this trace (None when tracing recorded nothing for it)."""
        return traceparent_of(self.span)


def traceparent_of(span: Span) -> str | None:
    if not span.get_span_context().is_valid:
        return None
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
    return carrier.get(TRACEPARENT)


@dataclass(frozen=True)
class Rejection:
    """A message the handler could not process for good, with the reason."""

    msg: Msg
    reason: str


Decoder = Callable[[Msg], Awaitable[T] | T]
BatchHandler = Callable[[list[Item[T]]], Awaitable[Sequence[Rejection]]]
Completion = Callable[[], Awaitable[Sequence[Rejection]]]


@dataclass(frozen=True)
class Staged(Generic[T]):
    """A batch handler in two stages, so that consecutive batches overlap.

    ``first(items)`` does the part that must follow delivery order (batches never overlap in it) and returns
    the completion: the rest of the work, run in the background (completions one at a time, in delivery
    order), returning the rejections like a ``BatchHandler``. Messages are acked after their completion."""

    first: Callable[[list[Item[T]]], Awaitable[Completion]]
    #: A message that must lead a batch of its own: the messages before it in a fetched batch are begun (and so
    #: completed and acked) first, without it. Ingest's forks: a fork's first stage waits for its parent's
    #: partition, which may wait for a message of this partition; fetched behind the fork in one batch, that
    #: message would never be acked and the two partitions would wait on each other.
    leads: Callable[[Msg], bool] | None = None

    def parts(self, msgs: Sequence[Msg]) -> list[Sequence[Msg]]:
        """``msgs`` in stream order, cut before every message that ``leads`` (one part without ``leads``)."""
        if self.leads is None:
            return [msgs]
        ordered = sorted(msgs, key=lambda m: m.metadata.sequence.stream)
        cuts = [k for k, msg in enumerate(ordered) if k and self.leads(msg)]
        return [ordered[a:b] for a, b in zip([0, *cuts], [*cuts, len(ordered)], strict=True)]

    async def run(self, items: list[Item[T]]) -> Sequence[Rejection]:
        """Both stages back to back (retries of a failed batch, message by message)."""
        return await (await self.first(items))()
