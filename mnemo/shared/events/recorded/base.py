"""The registry of the events mnemo records, and the base of their payload models.

Every module of this package registers its stream's types here; importing any of them imports the package,
which imports them all, so the registry the codec reads is always complete.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from mnemo.shared.events.envelope import EventRegistry

REGISTRY = EventRegistry()


class RecordedPayload(BaseModel):
    """Frozen, and tolerant of fields it does not know (written by newer code, or dropped by an upcaster)."""

    model_config = ConfigDict(frozen=True, extra="ignore")
