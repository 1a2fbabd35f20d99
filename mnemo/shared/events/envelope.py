"""The envelope every event in the log carries, and the registry of event types with their upcasters.

Event types are registered by name (``message.recorded``), never by Python class path, so stored events
survive refactoring. Each type declares its payload model (``EventType.parse`` validates a read payload into
it, so no consumer keeps its own type-to-model map), its current schema version, the payload fields that
hold user text (encrypted at rest), and pure upcasters ``v(n) -> v(n+1)`` that are chained on read: stored
events are never rewritten.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote, unquote

from pydantic import BaseModel, ConfigDict, Field

Payload = dict[str, Any]
Upcaster = Callable[[Payload], Payload]
P = TypeVar("P", bound=BaseModel)

# Deterministic ids: the same platform fact always yields the same event id, so a redelivered or
# re-published message is recognised as a duplicate by the log's unique index.
_NAMESPACE = uuid.UUID("6f1b0d0e-8a55-4c43-9e0b-6d3c2a0f7a11")


def deterministic_id(*parts: str) -> str:
    """A UUID5 over ``parts``; stable across processes and runs."""
    return str(uuid.uuid5(_NAMESPACE, "\x1f".join(parts)))


def new_id() -> str:
    return str(uuid.uuid4())


def stream_id(kind: str, *parts: str) -> str:
    """``kind/part/part`` with each part percent-encoded, so ids containing ``/`` cannot collide."""
    if not parts:
        raise ValueError("a stream id needs at least one part")
    return "/".join([kind, *(quote(p, safe="") for p in parts)])


def stream_parts(sid: str) -> tuple[str, list[str]]:
    kind, *rest = sid.split("/")
    return kind, [unquote(p) for p in rest]


def utcnow() -> datetime:
    return datetime.now(UTC)


class EventEnvelope(BaseModel):
    """One event as stored in the log and relayed to JetStream (payload decrypted once read)."""

    model_config = ConfigDict(frozen=True)

    event_id: str = Field(..., description="globally unique; deduplicated by the log and by JetStream")
    type: str = Field(..., description="registry name, e.g. message.recorded")
    schema_version: int = Field(..., ge=1)
    stream_id: str
    version: int = Field(..., ge=1, description="position in its stream, 1-based, gapless")
    tenant_id: str
    occurred_at: datetime
    recorded_at: datetime
    correlation_id: str | None = None
    causation_id: str | None = None
    traceparent: str | None = Field(
        None, description="W3C trace context of the work that produced it; the relay publishes it as a header"
    )
    payload: Payload


class NewEvent(BaseModel):
    """An event about to be appended; the store assigns ``version`` and ``recorded_at``."""

    model_config = ConfigDict(frozen=True)

    event_id: str = Field(default_factory=new_id)
    type: str
    tenant_id: str
    occurred_at: datetime = Field(default_factory=utcnow)
    correlation_id: str | None = None
    causation_id: str | None = None
    traceparent: str | None = Field(None, description="W3C trace context to continue downstream (not payload)")
    payload: Payload
    schema_version: int | None = Field(None, description="defaults to the type's current version")


@dataclass(frozen=True)
class EventType(Generic[P]):
    """One registered type: its name in the log and its payload model (the model never reaches storage:
    payloads are stored as the dicts producers dumped, so the wire format does not depend on it)."""

    name: str
    model: type[P]
    schema_version: int = 1
    encrypted_fields: frozenset[str] = frozenset()
    upcasters: dict[int, Upcaster] = field(default_factory=dict)
    #: The payload field naming the user who owns the event's data: their data key encrypts its encrypted
    #: fields (None: the tenant's key), and erasing them erases it (``mnemo replay`` skips it).
    key_owner: str | None = None

    def upcast(self, from_version: int, payload: Payload) -> Payload:
        """Chain the upcasters from ``from_version`` to the current version."""
        if from_version > self.schema_version:
            raise UnknownSchemaVersion(f"{self.name} v{from_version} is newer than this code (v{self.schema_version})")
        for v in range(from_version, self.schema_version):
            try:
                step = self.upcasters[v]
            except KeyError:
                raise UnknownSchemaVersion(f"no upcaster for {self.name} v{v} -> v{v + 1}") from None
            payload = step(dict(payload))
        return payload

    def owner(self, payload: Payload) -> str | None:
        """The user owning an event of this type with ``payload`` (see ``key_owner``), or None."""
        value = payload.get(self.key_owner) if self.key_owner else None
        return value if isinstance(value, str) else None

    def parse(self, payload: Payload) -> P:
        """The payload of an event of this type (as read: upcast, decrypted) as its model."""
        return self.model.model_validate(payload)


class UnknownEventType(LookupError):
    pass


class UnknownSchemaVersion(LookupError):
    pass


class EventRegistry:
    def __init__(self) -> None:
        self._types: dict[str, EventType[Any]] = {}
        self._by_model: dict[type[BaseModel], EventType[Any]] = {}

    def register(
        self,
        name: str,
        model: type[P],
        *,
        schema_version: int = 1,
        encrypted: Iterable[str] = (),
        upcasters: dict[int, Upcaster] | None = None,
        key_owner: str | None = None,
    ) -> EventType[P]:
        """Bind ``name`` (at ``schema_version``) to its payload ``model``; a name and a model are registered once
        each, so the payload class alone says which event it is (:meth:`of`)."""
        if name in self._types:
            raise ValueError(f"event type {name!r} registered twice")
        if model in self._by_model:
            raise ValueError(f"{model.__name__} is already the payload of {self._by_model[model].name!r}")
        et = EventType(name, model, schema_version, frozenset(encrypted), dict(upcasters or {}), key_owner)
        self._types[name] = et
        self._by_model[model] = et
        return et

    def get(self, name: str) -> EventType[Any]:
        try:
            return self._types[name]
        except KeyError:
            raise UnknownEventType(name) from None

    def of(self, model: type[P]) -> EventType[P]:
        """The event type whose payload class is ``model``; :class:`UnknownEventType` for a class not registered."""
        try:
            et: EventType[P] = self._by_model[model]
        except KeyError:
            raise UnknownEventType(f"{model.__name__} is not the payload of a registered event type") from None
        return et

    def payload(self, env: EventEnvelope) -> BaseModel:
        """``env``'s payload as its type's model; :class:`UnknownEventType` for a type not registered."""
        parsed: BaseModel = self.get(env.type).parse(env.payload)
        return parsed

    def __contains__(self, name: object) -> bool:
        return name in self._types

    def names(self) -> list[str]:
        return sorted(self._types)
