"""Recorded events built directly, for tests that seed read models without going through ingest."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shared.events.envelope import EventEnvelope, deterministic_id
from shared.events.recorded import REGISTRY


def recorded(
    tenant: str, stream: str, version: int, type_: str, payload: dict[str, Any], at: datetime
) -> EventEnvelope:
    """An event as the log would return it: deterministic id, current schema version, times ``at``."""
    return EventEnvelope(
        event_id=deterministic_id(stream, str(version)),
        type=type_,
        schema_version=REGISTRY.get(type_).schema_version,
        stream_id=stream,
        version=version,
        tenant_id=tenant,
        occurred_at=at,
        recorded_at=at,
        payload=payload,
    )
