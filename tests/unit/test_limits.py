"""Per-tenant limits: the settings (defaults, per-tenant overrides), the request-rate token bucket, and
ingest's refusal of oversized chat events (dead-lettered with a ``message_too_large`` reason)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from mnemo.services.ingest.handlers import decode_command
from mnemo.shared import subjects
from mnemo.shared.delivery import InvalidMessage
from mnemo.shared.limits import RateLimited, RateLimiter
from mnemo.shared.settings import LimitsSettings, Settings


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_tenant_gets_its_burst_then_its_rate_and_other_tenants_their_own() -> None:
    clock = Clock()
    limiter = RateLimiter(LimitsSettings(rpc_per_second=2, rpc_burst=3), clock)

    for _ in range(3):
        limiter.check("a")
    with pytest.raises(RateLimited, match=r"retry in 0\.50s"):
        limiter.check("a")
    limiter.check("b")  # another tenant's bucket is full
    clock.now += 0.5  # one token back at 2 per second
    limiter.check("a")
    with pytest.raises(RateLimited):
        limiter.check("a")
    clock.now += 60
    for _ in range(3):  # refilled up to the burst, not beyond
        limiter.check("a")
    with pytest.raises(RateLimited):
        limiter.check("a")


def test_a_rate_of_zero_is_no_limit_and_overrides_apply_per_tenant() -> None:
    limits = LimitsSettings(rpc_per_second=0, tenants={"capped": {"rpc_per_second": 1, "rpc_burst": 1}})
    limiter = RateLimiter(limits, Clock())

    for _ in range(1000):
        limiter.check("free")
    limiter.check("capped")
    with pytest.raises(RateLimited) as refused:
        limiter.check("capped")
    assert refused.value.code == "rate_limited"


def test_limits_come_from_the_settings_tree_with_per_tenant_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_LIMITS__MAX_BOOK_ENTRIES", "7")
    monkeypatch.setenv("MNEMO_LIMITS__TENANTS", json.dumps({"big": {"max_message_bytes": 5_000_000}}))

    limits = Settings().limits

    assert limits.for_tenant("big").max_message_bytes == 5_000_000
    assert limits.for_tenant("big").max_book_entries == 7
    assert limits.for_tenant("small").max_message_bytes == LimitsSettings().max_message_bytes
    assert limits.largest_message_bytes == 5_000_000


@pytest.mark.parametrize("override", [{"max_book_entrys": 5}, {"max_book_entries": 0}])
def test_a_misspelt_or_out_of_range_override_fails_at_start(override: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        LimitsSettings(tenants={"t": override})


def message(tenant: str, content: str) -> bytes:
    return json.dumps({"tenant_id": tenant, "user_id": "u", "conversation_id": "c", "message_id": "m",
                       "bot_id": "b", "role": "user", "content": content,
                       "created_at": "2026-01-01T00:00:00Z"}).encode()  # fmt: skip


def test_ingest_refuses_a_chat_event_over_its_tenants_size_limit() -> None:
    limits = LimitsSettings(max_message_bytes=1_000, tenants={"big": {"max_message_bytes": 50_000}})

    small = decode_command(subjects.MESSAGE_CREATED, message("t", "hello"), limits)
    big_ok = decode_command(subjects.MESSAGE_CREATED, message("big", "x" * 10_000), limits)
    with pytest.raises(InvalidMessage, match=r"^message_too_large: \d+ bytes, over the tenant's 1000"):
        decode_command(subjects.MESSAGE_CREATED, message("t", "x" * 10_000), limits)
    with pytest.raises(InvalidMessage, match=r"over the tenant.s 50000 \(MNEMO_LIMITS__MAX_MESSAGE_BYTES"):
        decode_command(subjects.MESSAGE_CREATED, b"{" + b" " * 60_000 + b"}", limits)  # refused unparsed

    assert small.tenant_id == "t"
    assert big_ok.tenant_id == "big"
