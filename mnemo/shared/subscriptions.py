"""What a log consumer handles, declared once: its table of event class -> handler.

Everything about a consumer's events follows from its table (:class:`EventHandlers`):

- its durable's JetStream ``filter_subjects`` (:meth:`EventHandlers.filter_subjects`): an event type it does
  not handle is never delivered to it (``mnemo.shared.consumers.log_consumer_router``);
- what the codec decrypts (:meth:`EventHandlers.decrypted`): only the encrypted fields its handlers read. A
  handler that needs a few plain fields of a large event names a narrower *view* (a model of those fields),
  so e.g. a 1.5 MB lorebook import reaches the embedding service as its book id, never decrypted;
- the dispatch (:meth:`EventHandlers.dispatch`): each event's payload parsed once into its class (or view),
  an invalid one rejected with the reason (dead-lettered by the consumer), the others handed in log order to
  their handler with the batch's context (whatever the service collects a batch into).

The key is the payload class: the event registry binds each class to one event type
(``EventRegistry.of``), so a table cannot name a type that does not exist, nor a subject by hand.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from mnemo.shared import subjects
from mnemo.shared.delivery.types import Item, Rejection
from mnemo.shared.events.envelope import EventEnvelope, EventRegistry, EventType
from mnemo.shared.events.recorded import REGISTRY

P = TypeVar("P", bound=BaseModel)
P_co = TypeVar("P_co", bound=BaseModel, covariant=True)
C = TypeVar("C")


@dataclass(frozen=True)
class Delivered(Generic[P_co]):
    """One event a handler receives: its envelope, its payload as the handler's class (or view), and the trace
    context its processing continues (what the events it produces carry)."""

    envelope: EventEnvelope
    payload: P_co
    traceparent: str | None = None


Handler = Callable[[C, Delivered[P]], Awaitable[None] | None]


@dataclass(frozen=True)
class Route:
    """One row of a table: the event type, the model its payload is parsed as, the handler."""

    event_type: EventType[Any]
    view: type[BaseModel]
    handler: Callable[[Any, Delivered[Any]], Awaitable[None] | None]

    @property
    def decrypted(self) -> frozenset[str]:
        """The event's encrypted fields that the view reads."""
        return self.event_type.encrypted_fields & frozenset(self.view.model_fields)


class EventHandlers(Generic[C]):
    """A log consumer's table: event class -> handler, each handler called with the batch's context ``C``."""

    def __init__(self, registry: EventRegistry = REGISTRY) -> None:
        self._registry = registry
        self._routes: dict[str, Route] = {}

    def on(self, event: type[P], handler: Handler[C, P]) -> EventHandlers[C]:
        """Handle ``event``: its payload is parsed as its class, every field decrypted."""
        return self._add(self._registry.of(event), event, handler)

    def on_view(self, event: type[BaseModel], view: type[P], handler: Handler[C, P]) -> EventHandlers[C]:
        """Handle ``event`` reading only ``view``'s fields of its payload: the event's other encrypted fields
        are neither decrypted nor parsed."""
        unknown = set(view.model_fields) - set(event.model_fields)
        if unknown:
            raise ValueError(f"{view.__name__} reads {sorted(unknown)}, which {event.__name__} does not have")
        return self._add(self._registry.of(event), view, handler)

    def _add(self, event_type: EventType[Any], view: type[BaseModel], handler: Handler[C, Any]) -> EventHandlers[C]:
        if event_type.name in self._routes:
            raise ValueError(f"{event_type.name} is handled twice")
        self._routes[event_type.name] = Route(event_type, view, handler)
        return self

    @property
    def types(self) -> frozenset[str]:
        """The names of the event types handled."""
        return frozenset(self._routes)

    def route(self, type_name: str) -> Route | None:
        return self._routes.get(type_name)

    def filter_subjects(self) -> list[str]:
        """The log subjects of the handled types: the durable's JetStream filter."""
        return sorted(subjects.log_subject(name) for name in self._routes)

    def decrypted(self, type_name: str) -> frozenset[str]:
        """What the codec decrypts of a handled event of ``type_name``."""
        route = self._routes.get(type_name)
        return route.decrypted if route is not None else frozenset()

    def sort(self, context: C, envelopes: Iterable[EventEnvelope]) -> list[tuple[EventEnvelope, str]]:
        """:meth:`dispatch` for callers holding envelopes, not messages (``mnemo replay``, pure plans), with
        synchronous handlers; returns the handled events whose payload does not parse, with the reason."""
        invalid: list[tuple[EventEnvelope, str]] = []
        for env in envelopes:
            parsed = self._parsed(env, None)
            if isinstance(parsed, str):
                invalid.append((env, parsed))
            if not isinstance(parsed, tuple):
                continue
            route, delivered = parsed
            outcome = route.handler(context, delivered)
            if inspect.isawaitable(outcome):
                if inspect.iscoroutine(outcome):
                    outcome.close()
                raise TypeError(f"the handler of {env.type} is asynchronous: dispatch it")
        return invalid

    async def dispatch(self, context: C, items: Sequence[Item[EventEnvelope]]) -> list[Rejection]:
        """Hand each handled item to its handler with ``context``, in order; an item whose payload does not
        parse is rejected with the reason and the others go on. An event of a type not in the table (one
        published before the durable's filter was narrowed) is passed over."""
        rejections: list[Rejection] = []
        for item in items:
            parsed = self._parsed(item.value, item.traceparent)
            if isinstance(parsed, str):
                rejections.append(Rejection(item.msg, parsed))
            if not isinstance(parsed, tuple):
                continue
            route, delivered = parsed
            outcome = route.handler(context, delivered)
            if inspect.isawaitable(outcome):
                await outcome
        return rejections

    def _parsed(self, env: EventEnvelope, traceparent: str | None) -> tuple[Route, Delivered[Any]] | str | None:
        """The route and the delivered event of ``env``: None when its type is not handled, the reason when its
        payload does not parse."""
        route = self._routes.get(env.type)
        if route is None:
            return None
        try:
            payload = route.view.model_validate(env.payload)
        except ValidationError as exc:
            return f"invalid {env.type} payload: {exc}"
        return route, Delivered(env, payload, traceparent)
