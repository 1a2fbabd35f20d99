"""Lore scans bounded: a short scan inline, the others on a bounded thread pool, a cap per tenant, a time budget.

A keyword scan is CPU work that grows with the chat text times the keys (regex keys run on RE2, linear in
the text, and release the GIL while they scan). Run inline, one tenant's huge book on long messages would
hold the event loop every other request of this replica waits on. Here each scan runs on one of
``workers`` threads; a tenant holds at most ``per_tenant`` of them (the others stay free for other tenants),
and a scan past ``budget_s`` stops at its next check (``ScanRequest.deadline``) and its request gets no
keyword lore (``lore_scan_budget`` in ``degraded``). The caps are per replica, in process.

The common scan is short: the new text of a conversation against a compiled book, well under a millisecond.
Handing it to a thread costs more than that (two wake-ups, the GIL passed back and forth), so
:meth:`ScanPool.first_inline` runs it on the loop first with a budget of ``inline_s`` (5 ms) when the chat
is short; past it the scan stops with no result, goes to a worker as above, and that book's scans skip the
inline attempt for :data:`SLOW_FOR_S`. So the loop is held at most ``inline_s`` of the scan's work (plus one
check's step) per book and minute, by any tenant. Compiling a book (``compile``) always runs on a worker.

The inline budget counts the loop thread's CPU time (``time.thread_time``), not wall time: what a book costs
the loop is the work its scan does. On a shared machine the OS takes the CPU away from the process for tens
of milliseconds at a time (a 0.5 ms scan measured at 5-40 ms of wall time under a load of 25, 2026-11-27),
and a wall-clock budget sent every book to the workers for a minute at the first such pause: each request
then paid a thread hand-off and waited on the worker while the loop ran the other parts' work (issue 26:
``lore.activate`` at 14-34 % of a request). A worker's budget stays in wall time: it bounds when the reply
can come.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from mnemo.services.context_assembler.lore.engine.scan_types import ScanBudgetExceeded
from mnemo.services.context_assembler.settings import LoreScanSettings

T = TypeVar("T")
#: What a scan's deadline is read on: ``time.monotonic`` on a worker, ``time.thread_time`` inline.
Clock = Callable[[], float]
#: How long a book whose scan overran ``inline_s`` is scanned on the workers only.
SLOW_FOR_S = 60.0
#: Chat text (the history window, the user message and the extra texts) above which a scan never runs inline.
INLINE_MAX_CHARS = 32_768
_SLOW_MEMORY = 4096


class ScanRefused(Exception):
    """The scan did not finish within its budget (or could not start: the tenant's workers stayed busy)."""


class ScanPool:
    def __init__(self, settings: LoreScanSettings | None = None) -> None:
        self.settings = settings or LoreScanSettings()
        self._pool = ThreadPoolExecutor(max_workers=self.settings.workers, thread_name_prefix="lore-scan")
        self._tenants: dict[str, tuple[asyncio.Semaphore, int]] = {}  # tenant -> (its slots, users)
        self._slow: dict[object, float] = {}  # book key -> monotonic time until which it skips the inline try

    async def first_inline(self, tenant_id: str, book: object, chars: int, scan: Callable[[float, Clock], T]) -> T:
        """``scan(deadline, clock)`` on the loop within ``inline_s`` of this thread's CPU time when the chat has
        at most :data:`INLINE_MAX_CHARS` characters and ``book`` (any hashable naming the compiled lore) has
        not overrun lately; otherwise, or when it overruns, on a worker (:meth:`run`, wall time). ``scan`` must
        leave no trace when it raises ``ScanBudgetExceeded`` (the engine's do not)."""
        inline = self.settings.inline_s
        now = time.monotonic()
        if inline > 0 and chars <= INLINE_MAX_CHARS and self._slow.get(book, 0.0) <= now:
            try:
                return scan(time.thread_time() + inline, time.thread_time)
            except ScanBudgetExceeded:
                if len(self._slow) >= _SLOW_MEMORY:
                    self._slow = {k: until for k, until in self._slow.items() if until > now}
                self._slow[book] = now + SLOW_FOR_S
        return await self.run(tenant_id, lambda deadline: scan(deadline, time.monotonic))

    async def compile(self, tenant_id: str, build: Callable[[], T]) -> T:
        """``build()`` on a worker, holding one of the tenant's slots, with no budget: compiling costs what the
        book's size does (bounded by the lore limits), and its result is cached by the caller."""
        slots = self._enter(tenant_id)
        try:
            await slots.acquire()
        except BaseException:
            self._leave(tenant_id)
            raise
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, build)
        finally:
            self._release(tenant_id, slots)

    async def run(self, tenant_id: str, scan: Callable[[float], T]) -> T:
        """``scan(deadline)`` on a worker; raises :class:`ScanRefused` when it does not end in its budget
        (plus a grace for the worker to notice), or when the tenant's slots stay busy for a whole budget."""
        budget = self.settings.budget_s
        slots = self._enter(tenant_id)
        try:
            await asyncio.wait_for(slots.acquire(), budget)
        except TimeoutError:
            self._leave(tenant_id)
            raise ScanRefused(f"the tenant's {self.settings.per_tenant} lore scan slots stayed busy") from None
        except BaseException:
            self._leave(tenant_id)
            raise
        loop = asyncio.get_running_loop()
        try:
            future: Future[T] = self._pool.submit(scan, time.monotonic() + budget)
        except BaseException:
            self._release(tenant_id, slots)
            raise

        def done(_: Future[T]) -> None:
            # The slot is the running scan's until it ends, even when its request stopped waiting for it.
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile (shutdown)
                loop.call_soon_threadsafe(self._release, tenant_id, slots)

        future.add_done_callback(done)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), budget + self.settings.grace_s)
        except TimeoutError:
            raise ScanRefused(f"the lore scan ran past its {budget}s budget") from None

    def _release(self, tenant_id: str, slots: asyncio.Semaphore) -> None:
        slots.release()
        self._leave(tenant_id)

    def _enter(self, tenant_id: str) -> asyncio.Semaphore:
        slots, users = self._tenants.get(tenant_id, (None, 0))
        if slots is None:
            slots = asyncio.Semaphore(self.settings.per_tenant)
        self._tenants[tenant_id] = (slots, users + 1)
        return slots

    def _leave(self, tenant_id: str) -> None:
        """Forget a tenant's slots once nobody holds or waits for them (the table holds active tenants only)."""
        slots, users = self._tenants[tenant_id]
        if users <= 1:
            del self._tenants[tenant_id]
        else:
            self._tenants[tenant_id] = (slots, users - 1)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
