"""Lore scans off the event loop: a bounded thread pool, a cap per tenant, and a time budget per scan.

A keyword scan is CPU work that grows with the chat text times the keys (regex keys run on RE2, linear in
the text, and release the GIL while they scan). Run inline, one tenant's huge book on long messages would
hold the event loop every other request of this replica waits on. Here each scan runs on one of
``workers`` threads; a tenant holds at most ``per_tenant`` of them (the others stay free for other tenants),
and a scan past ``budget_s`` stops at its next check (``ScanRequest.deadline``) and its request gets no
keyword lore (``lore_scan_budget`` in ``degraded``). The caps are per replica, in process.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from mnemo.services.context_assembler.settings import LoreScanSettings

T = TypeVar("T")


class ScanRefused(Exception):
    """The scan did not finish within its budget (or could not start: the tenant's workers stayed busy)."""


class ScanPool:
    def __init__(self, settings: LoreScanSettings | None = None) -> None:
        self.settings = settings or LoreScanSettings()
        self._pool = ThreadPoolExecutor(max_workers=self.settings.workers, thread_name_prefix="lore-scan")
        self._tenants: dict[str, tuple[asyncio.Semaphore, int]] = {}  # tenant -> (its slots, users)

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
