"""Context replies complete enough to compare, for the end-to-end tests.

On a loaded machine, or with the embedder cold right after a restart, a part of a context reply now and then
misses its deadline and the reply names it in ``degraded``. A test about what the reply holds asks again rather
than compare a reply missing a part. Not every entry of ``degraded`` is such a miss: ``lore:<uid>`` and
``knowledge:<fact_id>`` are the budget's notes (part of the answer), and ``bot_profile`` and ``persona`` also
name a bot or persona the platform never sent, which asking again does not change.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from tests.waiting import wait_for_stack

#: The parts the context-assembler bounds by a deadline (its reads, the query embedding, the vector searches)
#: whose names mean nothing else.
LATE_PARTS = frozenset(
    {"embedder", "vector_index", "vector_index_lag", "history", "knowledge", "memories", "legacy_memories"}
    | {"retrieved", "branches", "persona_labels", "lore", "lore_documents", "lore_vectors", "lore_timed"}
)


def missed_parts(reply: dict[str, Any]) -> list[str]:
    """The parts of the reply that missed their deadline."""
    return [part for part in reply.get("degraded", []) if part in LATE_PARTS]


async def whole_reply(
    ask: Callable[[], Awaitable[dict[str, Any]]], what: str, like: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``ask()``'s reply once it misses no part and, given ``like``, once it equals ``like`` (up to three
    minutes); the last reply is returned either way, for the caller's assertion to show."""
    reply: dict[str, Any] = {}

    async def whole() -> bool:
        reply.clear()
        reply.update(await ask())
        return not missed_parts(reply) and (like is None or reply == like)

    with contextlib.suppress(AssertionError):
        await wait_for_stack(whole, what)
    return reply
