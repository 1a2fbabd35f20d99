"""What a decider of an aggregate answers for one command: the events to append, or why it is refused."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from mnemo.shared.events.envelope import NewEvent


@dataclass(frozen=True)
class Decision:
    """What one command became: events to append (none for a duplicate) or the reason it is refused."""

    events: tuple[NewEvent, ...] = ()
    rejection: str | None = None


def digest(*parts: str) -> str:
    """A stable key over ``parts`` (for event ids of facts the platform names by content, not by an id)."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()
