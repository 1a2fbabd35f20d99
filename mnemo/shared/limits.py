"""Per-tenant limits (``MNEMO_LIMITS__*``, :class:`mnemo.shared.settings.LimitsSettings`): the refusals and the
request rate limiter every answering service shares.

Each refusal has its own code: ``message_too_large`` (a chat event, dead-lettered by ingest with that reason),
``book_too_large`` and ``too_many_books`` (lore RPCs), ``rate_limited`` (any ``mnemo.rpc.*`` request).

The rate limit is a token bucket per tenant, in process: each service replica admits ``rpc_per_second``
per tenant (bursts up to ``rpc_burst``), so a deployment with N replicas of a service admits up to N times
that. It is a guard against one tenant flooding a replica, not an exact quota.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mnemo.shared.settings import LimitsSettings


class LimitExceeded(Exception):
    """A request asks for more than its tenant's limits allow; ``code`` is its error code."""

    code = "limit_exceeded"


class MessageTooLarge(LimitExceeded):
    code = "message_too_large"


class BookTooLarge(LimitExceeded):
    code = "book_too_large"


class TooManyBooks(LimitExceeded):
    code = "too_many_books"


class RateLimited(LimitExceeded):
    code = "rate_limited"


_MAX_TENANTS = 10_000  # buckets kept before full (idle) ones are dropped: a refilled bucket is the default


class RateLimiter:
    """Token buckets per tenant: ``check(tenant)`` takes one token or raises :class:`RateLimited`."""

    def __init__(self, limits: LimitsSettings | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._limits = limits or LimitsSettings()
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # tenant -> (tokens, when last refilled)

    def check(self, tenant_id: str) -> None:
        limits = self._limits.for_tenant(tenant_id) if self._limits.tenants else self._limits
        rate, burst = limits.rpc_per_second, float(limits.rpc_burst)
        if rate <= 0:
            return
        now = self._clock()
        tokens, then = self._buckets.get(tenant_id, (burst, now))
        tokens = min(burst, tokens + (now - then) * rate)
        if tokens < 1:
            self._buckets[tenant_id] = (tokens, now)
            wait = (1 - tokens) / rate
            raise RateLimited(
                f"tenant {tenant_id!r} is over {rate:g} requests per second (MNEMO_LIMITS__RPC_PER_SECOND); "
                f"retry in {wait:.2f}s"
            )
        self._buckets[tenant_id] = (tokens - 1, now)
        if len(self._buckets) > _MAX_TENANTS:
            self._prune(now)

    def _prune(self, now: float) -> None:
        limits = self._limits
        for tenant, (tokens, then) in list(self._buckets.items()):
            if tokens + (now - then) * limits.rpc_per_second >= limits.rpc_burst:
                del self._buckets[tenant]
