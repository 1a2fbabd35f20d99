"""Per-key rate limits: a token bucket per API key (``MNEMO_GATEWAY__RATE_PER_S``, ``..._BURST``).

A key may send ``burst`` requests at once, then ``rate_per_s`` a second; past that it gets 429 with the
seconds until its next token in ``Retry-After``. Buckets live in the gateway process (each replica limits on
its own: behind N replicas a key gets up to N times the rate).
"""

from __future__ import annotations

import time
from collections.abc import Callable


class ApiKeyRateLimiter:
    def __init__(self, rate_per_s: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._rate, self._burst, self._clock = rate_per_s, max(1, burst), clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, when counted)

    @property
    def enabled(self) -> bool:
        return self._rate > 0

    def take(self, key: str) -> float | None:
        """None when ``key`` may go on (one token taken), else the seconds until it may."""
        if not self.enabled:
            return None
        now = self._clock()
        tokens, then = self._buckets.get(key, (float(self._burst), now))
        tokens = min(float(self._burst), tokens + (now - then) * self._rate)
        if tokens >= 1.0:
            self._buckets[key] = (tokens - 1.0, now)
            return None
        self._buckets[key] = (tokens, now)
        return (1.0 - tokens) / self._rate
