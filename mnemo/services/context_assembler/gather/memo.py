"""What several parts of one context request need is computed once: a per-request memo of awaitables.

The history, the persona and the fork family all start from the conversation's state; the search, the lore's
vector activation and the document chunks embed the same recent text. Each part asks for what it needs
(:func:`once`), and inside one request (:func:`request_scope`, opened by ``Gatherer.gather``) the first ask
starts the work and the others share its result, whichever part runs first. Outside a scope nothing is
remembered. The memo lives as long as the request: nothing is shared between requests or tenants.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Hashable, Iterator, Sequence
from typing import Any, TypeVar

from mnemo.shared.embedders.port import WrappedEmbedder
from mnemo.shared.tasks import retrieve_outcome

T = TypeVar("T")
_memo: contextvars.ContextVar[dict[Hashable, asyncio.Future[Any]] | None] = contextvars.ContextVar(
    "context_request_memo", default=None
)


@contextlib.contextmanager
def request_scope() -> Iterator[None]:
    """One request's memo, for the tasks it starts too (they copy the context, the memo is shared)."""
    token = _memo.set({})
    try:
        yield
    finally:
        _memo.reset(token)


async def once(key: Hashable, make: Callable[[], Awaitable[T]]) -> T:
    """``await make()``, run once per request for ``key``; a caller that stops waiting (a deadline) does not
    cancel it for the others."""
    memo = _memo.get()
    if memo is None:
        return await make()
    future = memo.get(key)
    if future is None:
        future = memo[key] = asyncio.ensure_future(make())
        future.add_done_callback(retrieve_outcome)
    return await asyncio.shield(future)


class MemoEmbedder(WrappedEmbedder):
    """An ``Embedder`` whose vectors are remembered per request (by text): the search and the lore ask for the
    same recent text, which is embedded once. A call with several texts is one batch of the missing ones. The
    parts share vectors when they are given the same instance (``app.py`` does)."""

    def start(self, texts: Sequence[str]) -> None:
        """Start embedding those of ``texts`` not asked for yet in this request, as one batch, without waiting:
        a later :meth:`embed` of any of them waits for this batch. Nothing outside a request."""
        memo = _memo.get()
        if memo is None:
            return
        # Keyed by this embedder too: one wrapped in another (a timing proxy between them) must not wait on
        # the vector its own outer call is computing.
        mine = id(self)
        missing = [t for t in dict.fromkeys(texts) if ("embed", mine, t) not in memo]
        if missing:
            batch = asyncio.ensure_future(self.inner.embed(missing))
            batch.add_done_callback(retrieve_outcome)
            for i, text in enumerate(missing):
                nth = memo[("embed", mine, text)] = asyncio.ensure_future(_nth(batch, i))
                nth.add_done_callback(retrieve_outcome)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        memo = _memo.get()
        if memo is None:
            return await self.inner.embed(texts)
        self.start(texts)
        return [await asyncio.shield(memo[("embed", id(self), t)]) for t in texts]


async def _nth(batch: asyncio.Future[list[list[float]]], i: int) -> list[float]:
    return (await batch)[i]
