"""How a projection hands each event to its handler: a table from event type to handler, events of other types
ignored, in log order. The MongoDB adapters collect the write each handler returns (:func:`write_ops`), the
in-memory fakes change their rows in place (:func:`apply_each`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TypeVar

from mnemo.shared.events.envelope import EventEnvelope

M = TypeVar("M")
Op = TypeVar("Op")


async def write_ops(
    model: M, events: Iterable[EventEnvelope], writes: Mapping[str, Callable[[M, EventEnvelope], Awaitable[Op]]]
) -> list[Op]:
    """The write of each of ``events`` whose type ``writes`` names, in order."""
    return [await writes[env.type](model, env) for env in events if env.type in writes]


def apply_each(
    model: M, events: Iterable[EventEnvelope], handlers: Mapping[str, Callable[[M, EventEnvelope], None]]
) -> None:
    """Hand each of ``events`` whose type ``handlers`` names to its handler, in order."""
    for env in events:
        if (handler := handlers.get(env.type)) is not None:
            handler(model, env)
