"""The registry of the events mnemo records, and the base of their payload models.

Every module of this package registers its stream's types here; importing any of them imports the package,
which imports them all, so the registry the codec reads is always complete.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from mnemo.shared.events.envelope import EventRegistry, NewEvent

REGISTRY = EventRegistry()


class RecordedPayload(BaseModel):
    """Frozen, and tolerant of fields it does not know (written by newer code, or dropped by an upcaster)."""

    model_config = ConfigDict(frozen=True, extra="ignore")


def new_event(
    payload: RecordedPayload,
    *,
    tenant_id: str,
    event_id: str | None = None,
    occurred_at: datetime | None = None,
    causation_id: str | None = None,
    correlation_id: str | None = None,
    traceparent: str | None = None,
) -> NewEvent:
    """The event ``payload`` is: its type the one its class is registered as (one class, one type), its payload
    the class's JSON form. The one way services build an event to append, so no type name and dict can disagree;
    what is not given takes ``NewEvent``'s default (a new id, now)."""
    given: dict[str, Any] = {
        "event_id": event_id,
        "occurred_at": occurred_at,
        "causation_id": causation_id,
        "correlation_id": correlation_id,
        "traceparent": traceparent,
    }
    return NewEvent(
        type=REGISTRY.of(type(payload)).name,
        tenant_id=tenant_id,
        payload=payload.model_dump(mode="json"),
        **{k: v for k, v in given.items() if v is not None},
    )
