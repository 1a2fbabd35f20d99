"""Reading rows around an erasure: a row whose key was destroyed is absent, never a failure.

An erasure destroys the owner's keys and then deletes their rows, but a projection that held the key in its
cache (``MNEMO_KEY_CACHE_SECONDS``) may write a row after that sweep; the privacy service's resweep removes it
once the cache has expired. Until then its encrypted fields raise ``KeyErased``. Readers skip such rows: the
data is gone by design, and one erased user's leftover must not fail another user's request (a book attached
to a bot, a tenant's listing). Found by the 100,000-case fuzz run, erasing a tenant while books were created in it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable
from typing import TypeVar

from mnemo.shared.crypto import KeyErased

D = TypeVar("D")
V = TypeVar("V")

__all__ = ["readable", "readable_one", "readable_sync"]


async def readable(rows: AsyncIterable[D] | Iterable[D], view: Callable[[D], Awaitable[V]]) -> list[V]:
    """``view`` of each row, in order, leaving out the rows whose key was erased."""
    out: list[V] = []
    if isinstance(rows, AsyncIterable):
        async for row in rows:
            await _append(out, view, row)
    else:
        for row in rows:
            await _append(out, view, row)
    return out


async def readable_one(row: D | None, view: Callable[[D], Awaitable[V]]) -> V | None:
    """``view`` of one row, or None when there is none or its key was erased."""
    if row is None:
        return None
    try:
        return await view(row)
    except KeyErased:
        return None


def readable_sync(rows: Iterable[D], view: Callable[[D], V]) -> list[V]:
    """:func:`readable` for a view that needs no I/O."""
    out: list[V] = []
    for row in rows:
        try:
            out.append(view(row))
        except KeyErased:
            continue
    return out


async def _append(out: list[V], view: Callable[[D], Awaitable[V]], row: D) -> None:
    with contextlib.suppress(KeyErased):
        out.append(await view(row))
