"""The embedded stack (`mnemo run`) as an operator watches it: its one probe server (run/probes.json) is ready
and its /metrics counts what the services did; the usage report (mnemo.rpc.ops.usage.v1, `mnemo status
--usage`) gives each tenant its messages, vectors, context requests and tokens, and no other tenant's; on a
secured stack only the operators' admin user may ask for it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import nats
import pytest
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from tests.e2e.scenes import turn
from tests.e2e.stackproc import StackProcess
from tests.e2e.subjects import ASSEMBLE, CREATED, USAGE
from tests.waiting import http_get

pytestmark = pytest.mark.e2e
TENANTS = {"t-usage-a": 4, "t-usage-b": 2}  # messages each
REQUESTS = {"t-usage-a": 2, "t-usage-b": 1}  # context requests each


async def request(nc: nats.NATS, subject: str, body: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads((await nc.request(subject, json.dumps(body).encode(), timeout=30)).data)
    return reply


def context_request(tenant: str) -> dict[str, Any]:
    return {"tenant_id": tenant, "user_id": "u-1", "conversation_id": "c-1", "bot_id": "bot-1", "max_tokens": 800}


async def feed(stack: StackProcess) -> None:
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        js = nc.jetstream()
        start = datetime(2026, 11, 1, 20, 0, tzinfo=UTC)
        for tenant, count in TENANTS.items():
            for i in range(count):
                body = turn(i, f"The lighthouse keeper's log, entry {i}.", start + timedelta(minutes=i), tenant=tenant,
                            user="u-1", conv="c-1", message_id=f"{tenant}-m{i}", persona=("p-1", "Ada"),
                            bot=("bot-1", "Mirelle"))  # fmt: skip
                await js.publish(CREATED, json.dumps(body).encode(), headers={"Nats-Msg-Id": body["message_id"]})
        for tenant, count in REQUESTS.items():
            for _ in range(count):
                while len((await request(nc, ASSEMBLE, context_request(tenant))).get("sections", [])) == 0:
                    await asyncio.sleep(0.5)
    finally:
        await nc.drain()


async def usage_of(stack: StackProcess, tenants: list[str], **asked: Any) -> dict[str, dict[str, Any]]:
    nc = await nats.connect(stack.nats_url, **stack.client_options("admin"))
    try:
        reply = await request(nc, USAGE, {"tenant_ids": tenants, **asked})
    finally:
        await nc.drain()
    return {t["tenant_id"]: t for t in reply["tenants"]}


@pytest.fixture(scope="module")
async def fed(stack: StackProcess) -> StackProcess:
    await feed(stack)
    return stack


async def test_the_usage_report_counts_each_tenants_own_usage(fed: StackProcess) -> None:
    deadline = asyncio.get_running_loop().time() + 90  # counts reach the database within the 10 s flush
    wanted = {t: (TENANTS[t], REQUESTS[t]) for t in TENANTS}
    usage: dict[str, dict[str, Any]] = {}
    while asyncio.get_running_loop().time() < deadline:
        usage = await usage_of(fed, [*TENANTS, "t-usage-none"])
        if {t: (usage[t]["messages"], usage[t]["context_requests"]) for t in TENANTS} == wanted and all(
            usage[t]["vectors"] >= TENANTS[t] for t in TENANTS
        ):
            break
        await asyncio.sleep(1)
    for tenant in TENANTS:
        assert (usage[tenant]["messages"], usage[tenant]["context_requests"]) == wanted[tenant], usage
        assert usage[tenant]["vectors"] >= TENANTS[tenant], "every message is embedded"
        assert usage[tenant]["context_tokens"] > 0
    assert usage["t-usage-none"]["messages"] == usage["t-usage-none"]["vectors"] == 0


async def test_the_usage_report_gives_each_tenants_memory_growth_per_type(fed: StackProcess) -> None:
    def messages(usage: dict[str, Any]) -> dict[str, Any]:
        return next((g for g in usage["memory_types"] if g["source"] == "message"), {})

    wanted = {t: {"source": "message", "type": "message", "held": n, "added": [{"day": "2026-11-01", "added": n}]}
              for t, n in TENANTS.items()}  # fmt: skip
    deadline = asyncio.get_running_loop().time() + 90
    usage: dict[str, dict[str, Any]] = {}
    while asyncio.get_running_loop().time() < deadline:  # the messages fed on 2026-11-01, as the read model has them
        usage = await usage_of(fed, [*TENANTS, "t-usage-none"], until="2026-11-01", growth_days=1)
        if {t: messages(usage[t]) for t in TENANTS} == wanted:
            break
        await asyncio.sleep(1)
    assert {t: messages(usage[t]) for t in TENANTS} == wanted, usage
    for tenant, count in TENANTS.items():
        assert usage[tenant]["vectors_by_kind"]["message"] >= count, "every message is embedded"
    assert usage["t-usage-none"]["memory_types"] == []
    assert not any(usage["t-usage-none"]["vectors_by_kind"].values())


def test_mnemo_status_usage_and_the_stacks_own_probes(fed: StackProcess) -> None:
    env = fed.client_env()
    out = subprocess.run(
        [sys.executable, "-m", "mnemo.runtime.cli", "status", "--usage", "--json", "--nats-url", fed.nats_url,
         "--tenant", "t-usage-a"],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    [row] = json.loads(out.stdout)["tenants"]
    assert (row["tenant_id"], row["messages"]) == ("t-usage-a", TENANTS["t-usage-a"])
    status = subprocess.run(
        [sys.executable, "-m", "mnemo.runtime.cli", "status", "--data-dir", str(fed.data_dir), "--json",
         "--nats-url", fed.nats_url],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )  # fmt: skip
    assert status.returncode == 0, status.stdout + status.stderr
    [process] = json.loads(status.stdout)["processes"]
    assert (process["name"], process["ready"]) == ("mnemo", True)
    url = json.loads((fed.data_dir / "run" / "probes.json").read_text())["mnemo"]
    assert http_get(f"{url}/readyz")[0] == 200
    metrics = http_get(f"{url}/metrics")[1]
    assert f'mnemo_rpc_requests_total{{subject="{ASSEMBLE}"}}' in metrics
    assert 'mnemo_messages_handled_total{service="ingest"}' in metrics
    assert 'mnemo_ingest_messages_total{partition="0"}' in metrics
    assert "t-usage-a" not in metrics, "no tenant id in a metric"


async def test_only_operators_may_ask_for_usage_on_a_secured_stack(fed: StackProcess) -> None:
    if not fed.secure:
        pytest.skip("the stack runs without --secure here (make test-e2e-secure runs it secured)")
    nc = await nats.connect(fed.nats_url, **fed.client_options("platform"))
    try:
        with pytest.raises((NatsTimeout, NoRespondersError, TimeoutError)):
            await nc.request(USAGE, b"{}", timeout=3)
    finally:
        await nc.close()
    assert await usage_of(fed, ["t-usage-a"])
