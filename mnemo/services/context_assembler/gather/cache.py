"""Reads a replica keeps until the log says what they were read from changed (bot, persona, fork family,
attached books, documents, timed lore state, the bot's facts).

Each kept read names its sources: the log streams (or tenant-wide topics) whose events change it. Every
replica hears the relayed events of those kinds (``invalidations.py``: core NATS, no queue group, so each
replica gets each one) and drops what depended on the event's stream; the next request reads again. A read
made while (or just after) its source changed is used but not kept: the event can arrive before another
writer's projection is visible, so a read is kept only when its sources last changed ``settle_s`` before
it began. Core NATS can lose a message across a reconnection, so nothing is kept longer than ``ttl_s``
either: that bounds how stale a missed invalidation leaves a read. The reads stay scoped as before (the keys
carry the tenant, and an erasure of a tenant drops all it kept).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")
#: Kept reads per replica (least recently used dropped first).
SIZE = 8192


def tenant_topic(tenant_id: str) -> str:
    """The source every kept read of a tenant names: an erasure of the tenant (or of one of its users)."""
    return f"tenant/{tenant_id}"


@dataclass
class _Entry:
    value: Any
    at: float
    sources: tuple[str, ...]


class LogCache:
    def __init__(
        self, ttl_s: float = 60.0, settle_s: float = 2.0, size: int = SIZE, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl_s = ttl_s
        self.settle_s = settle_s
        self._size = size
        self._clock = clock
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._by_source: dict[str, set[Hashable]] = {}
        self._changed_at: dict[str, float] = {}

    async def read(self, key: Hashable, sources: Sequence[str], read: Callable[[], Awaitable[T]]) -> T:
        """``await read()``, or what it returned before if none of ``sources`` changed since (and it is not
        older than ``ttl_s``)."""
        now = self._clock()
        entry = self._entries.get(key)
        if entry is not None and now - entry.at <= self.ttl_s:
            self._entries.move_to_end(key)
            return entry.value  # type: ignore[no-any-return]
        value = await read()
        settled = now - self.settle_s
        if all(self._changed_at.get(s, settled - 1.0) < settled for s in sources):
            self._keep(key, _Entry(value, now, tuple(sources)))
        return value

    async def read_each(
        self,
        keys: Sequence[Hashable],
        sources: Sequence[str],
        read: Callable[[list[Hashable]], Awaitable[dict[Hashable, T]]],
    ) -> dict[Hashable, T | None]:
        """:meth:`read` for many keys of the same sources at once: those kept are not read again, the rest in
        one ``read`` of the missing keys (a key it does not return is kept as None: nothing there)."""
        now = self._clock()
        out: dict[Hashable, T | None] = {}
        missing: list[Hashable] = []
        for key in dict.fromkeys(keys):
            entry = self._entries.get(key)
            if entry is not None and now - entry.at <= self.ttl_s:
                self._entries.move_to_end(key)
                out[key] = entry.value
            else:
                missing.append(key)
        if missing:
            got = await read(missing)
            settled = now - self.settle_s
            keep = all(self._changed_at.get(s, settled - 1.0) < settled for s in sources)
            for key in missing:
                out[key] = got.get(key)
                if keep:
                    self._keep(key, _Entry(out[key], now, tuple(sources)))
        return {key: out[key] for key in dict.fromkeys(keys)}

    def changed(self, source: str) -> None:
        """``source`` changed: drop what depended on it; a read starting within ``settle_s`` is not kept."""
        now = self._clock()
        if len(self._changed_at) > self._size:
            self._changed_at = {s: at for s, at in self._changed_at.items() if at > now - self.settle_s}
        self._changed_at[source] = now
        for key in self._by_source.pop(source, set()):
            self._drop(key)

    def clear(self) -> None:
        self._entries.clear()
        self._by_source.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def _keep(self, key: Hashable, entry: _Entry) -> None:
        self._drop(key)
        self._entries[key] = entry
        for source in entry.sources:
            self._by_source.setdefault(source, set()).add(key)
        while len(self._entries) > self._size:
            self._drop(next(iter(self._entries)))

    def _drop(self, key: Hashable) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        for source in entry.sources:
            keys = self._by_source.get(source)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_source[source]


async def cached(cache: LogCache | None, key: Hashable, sources: Sequence[str], read: Callable[[], Awaitable[T]]) -> T:
    """``read()`` through ``cache`` when there is one."""
    return await read() if cache is None else await cache.read(key, sources, read)
