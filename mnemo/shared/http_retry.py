"""Bounded retries for JSON POSTs to OpenAI-compatible HTTP APIs, shared by the embedding and chat adapters.

Contract of ``post_json_with_retries``:
- Returns the first 2xx response; the caller parses it (a malformed 2xx body is the caller's problem,
  because only the caller knows what "usable" means).
- 408, 409, 429, 5xx, timeouts and transport errors are retried up to ``policy.max_retries`` times. The wait is
  the server's ``Retry-After`` seconds when given (capped at ``policy.max_delay_s``: a server must not park a
  worker for an hour), else exponential backoff from ``policy.backoff_s``.
- Any other status raises ``RequestRefused`` at once: a bad key, model or request body does not heal.
- When the retries are spent, ``RetriesExhausted`` carries the last error for the log.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any

import httpx

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class RequestRefused(Exception):
    """The server answered with a status that retrying will not change."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"HTTP {response.status_code}: {response.text[:300]}")
        self.response = response


class RetriesExhausted(Exception):
    """Every attempt failed with a retryable error; ``last_error`` describes the final one."""

    def __init__(self, attempts: int, last_error: str) -> None:
        super().__init__(f"failed after {attempts} attempts ({last_error})")
        self.attempts = attempts
        self.last_error = last_error


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 3
    backoff_s: float = 0.5
    max_delay_s: float = 30.0

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.backoff_s < 0 or self.max_delay_s < 0:
            raise ValueError("retry policy values must not be negative")

    def backoff(self, attempt: int) -> float:
        """Exponential wait before retry number ``attempt + 1`` (attempt counts from 0)."""
        return float(min(self.backoff_s * 2**attempt, self.max_delay_s))

    def delay(self, attempt: int, response: httpx.Response | None) -> float:
        """The server's ``Retry-After`` if it gave a usable one, else the backoff."""
        hinted = retry_after_s(response, self.max_delay_s) if response is not None else None
        return self.backoff(attempt) if hinted is None else hinted


def retry_after_s(response: httpx.Response, cap: float) -> float | None:
    """``Retry-After`` in seconds, capped; the HTTP-date form is not used by these APIs and is ignored."""
    raw = response.headers.get("Retry-After")
    try:
        seconds = float(raw) if raw is not None else None
    except ValueError:
        return None
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return None
    return min(seconds, cap)


async def post_json_with_retries(
    client: httpx.AsyncClient, url: str, body: dict[str, Any], policy: RetryPolicy
) -> httpx.Response:
    """POST ``body`` as JSON under ``policy`` (see the module contract)."""
    last_error = "no attempt"
    for attempt in range(policy.max_retries + 1):
        response: httpx.Response | None = None
        try:
            response = await client.post(url, json=body)
        except httpx.TransportError as exc:  # includes every httpx.TimeoutException
            last_error = f"{type(exc).__name__}: {exc}"
        else:
            if response.is_success:
                return response
            if response.status_code not in RETRYABLE_STATUS:
                raise RequestRefused(response)
            last_error = f"HTTP {response.status_code}: {response.text[:300]}"
        if attempt < policy.max_retries:
            await asyncio.sleep(policy.delay(attempt, response))
    raise RetriesExhausted(policy.max_retries + 1, last_error)
