"""Retry-After parsing and backoff of the shared HTTP retry policy."""

from __future__ import annotations

import httpx
import pytest

from mnemo.shared.http_retry import RetryPolicy, retry_after_s


def _response(retry_after: str | None) -> httpx.Response:
    return httpx.Response(429, headers={"Retry-After": retry_after} if retry_after is not None else {})


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("2", 2.0),
        ("0.5", 0.5),
        ("0", 0.0),
        ("999", 30.0),
        (None, None),
        ("-1", None),
        ("nan", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", None),
    ],
)
def test_retry_after_seconds(header: str | None, expected: float | None) -> None:
    assert retry_after_s(_response(header), cap=30.0) == expected


def test_delay_prefers_retry_after_and_backs_off_exponentially_up_to_the_cap() -> None:
    policy = RetryPolicy(max_retries=5, backoff_s=0.5, max_delay_s=3.0)
    assert [policy.backoff(a) for a in range(4)] == [0.5, 1.0, 2.0, 3.0]
    assert policy.delay(0, _response("2")) == 2.0
    assert policy.delay(1, _response(None)) == 1.0
    assert policy.delay(1, None) == 1.0
    with pytest.raises(ValueError, match="negative"):
        RetryPolicy(max_retries=-1)
