"""The gateway's operator views on a real nats-server: only a key with the operator right reads them, and an
operator key of one tenant never sees nor redrives another tenant's dead letters (a property over many random
tenants and letters); lag is `mnemo status`'s reading; usage is asked for the key's tenant only."""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg

from mnemo.services.gateway.settings import GatewaySettings
from mnemo.shared import subjects
from mnemo.shared.delivery.dead_letters import DLQ_ATTEMPTS, DLQ_REASON, DLQ_SERVICE, DLQ_SUBJECT
from tests.integration.gateway_client import gateway_client

pytestmark = pytest.mark.integration

TENANTS = [f"t{n}-{uuid.uuid4().hex[:6]}" for n in range(12)]
KEYS = {f"op-{t}": f"{t} operator" for t in TENANTS} | {f"plain-{TENANTS[0]}": TENANTS[0]}


def auth(tenant: str, *, operator: bool = True) -> dict[str, str]:
    return {"Authorization": f"Bearer {'op' if operator else 'plain'}-{tenant}"}


@pytest.fixture
async def gateway(nc: Client) -> AsyncIterator[httpx.AsyncClient]:
    async with gateway_client(GatewaySettings(api_keys=KEYS, request_timeout_s=2.0), nc) as client:
        yield client


async def dead_letter(nc: Client, body: bytes, reason: str = "invalid payload: content") -> int:
    """A dead letter as a service's ``DeadLetters.send`` writes it: the original body, the reason in headers."""
    headers = {DLQ_REASON: reason, DLQ_SUBJECT: subjects.MESSAGE_CREATED, DLQ_SERVICE: "ingest", DLQ_ATTEMPTS: "1"}
    ack = await nc.jetstream().publish(subjects.dead_letter_subject("ingest"), body, headers=headers)
    return int(ack.seq)


def letter_body(tenant: str, n: int) -> bytes:
    return json.dumps({"tenant_id": tenant, "message_id": f"m{n}", "content": 7}).encode()


async def listed(gateway: httpx.AsyncClient, tenant: str) -> dict[int, dict[str, Any]]:
    reply = await gateway.post("/v1/operator/dead_letters/list", json={"tenant_id": tenant}, headers=auth(tenant))
    assert reply.status_code == 200, reply.text
    return {d["seq"]: d for d in reply.json()["dead_letters"]}


async def test_an_operator_key_sees_and_redrives_its_own_tenants_dead_letters_only(
    gateway: httpx.AsyncClient, nc: Client
):
    rng = random.Random(29)
    owner: dict[int, str] = {}
    for n in range(60):
        tenant = rng.choice(TENANTS)
        owner[await dead_letter(nc, letter_body(tenant, n))] = tenant
    # No tenant's: not JSON, and JSON naming none; no operator key sees them.
    nobody = [await dead_letter(nc, b"\xff not json"), await dead_letter(nc, b'{"message_id": "m"}')]

    for tenant in TENANTS:
        seen = await listed(gateway, tenant)
        assert set(seen) == {s for s, t in owner.items() if t == tenant}
        assert all(json.loads(d["body"])["tenant_id"] == tenant for d in seen.values())
        assert all(d["reason"] == "invalid payload: content" and d["service"] == "ingest" for d in seen.values())

    # A tenant's redrive naming every other letter (others' and no one's) touches none of them.
    victim, attacker = TENANTS[0], TENANTS[1]
    theirs = [s for s, t in owner.items() if t != attacker] + nobody
    reply = await gateway.post(
        "/v1/operator/dead_letters/redrive", json={"tenant_id": attacker, "seqs": theirs}, headers=auth(attacker)
    )
    assert reply.status_code == 200, reply.text
    assert {o["outcome"] for o in reply.json()["outcomes"]} == {"not_found"}
    for tenant in TENANTS:
        assert set(await listed(gateway, tenant)) == {s for s, t in owner.items() if t == tenant}

    # Its own: back on the original subject, then deleted from the dead letters.
    own = [s for s, t in owner.items() if t == victim]
    reply = await gateway.post(
        "/v1/operator/dead_letters/redrive", json={"tenant_id": victim, "seqs": own}, headers=auth(victim)
    )
    outcomes = reply.json()["outcomes"]
    assert [o["seq"] for o in outcomes] == own
    assert all(o["outcome"].startswith(f"now {subjects.CHAT_STREAM} #") for o in outcomes), outcomes
    assert await listed(gateway, victim) == {}
    assert set(await listed(gateway, attacker)) == {s for s, t in owner.items() if t == attacker}


async def test_only_a_key_with_the_operator_right_for_the_named_tenant_reads_the_views(gateway: httpx.AsyncClient):
    tenant, other = TENANTS[0], TENANTS[1]
    for path in ("dead_letters/list", "lag", "usage"):
        plain = await gateway.post(
            f"/v1/operator/{path}", json={"tenant_id": tenant}, headers=auth(tenant, operator=False)
        )
        foreign = await gateway.post(f"/v1/operator/{path}", json={"tenant_id": other}, headers=auth(tenant))
        anonymous = await gateway.post(f"/v1/operator/{path}", json={"tenant_id": tenant})
        assert (plain.status_code, foreign.status_code, anonymous.status_code) == (403, 403, 401), path
        assert plain.json()["error"]["code"] == foreign.json()["error"]["code"] == "forbidden"
    redrive = {"tenant_id": tenant, "seqs": [1]}
    plain = await gateway.post("/v1/operator/dead_letters/redrive", json=redrive, headers=auth(tenant, operator=False))
    assert plain.status_code == 403


async def test_lag_is_mnemo_status_reading_of_each_durable(gateway: httpx.AsyncClient, nc: Client):
    js = nc.jetstream()
    durable = f"mnemo_probe_{uuid.uuid4().hex[:8]}"
    await js.add_consumer(subjects.DLQ_STREAM, durable_name=durable, filter_subject=subjects.DLQ_ALL)
    await dead_letter(nc, letter_body(TENANTS[2], 0))
    try:
        reply = await gateway.post("/v1/operator/lag", json={"tenant_id": TENANTS[2]}, headers=auth(TENANTS[2]))
    finally:
        await js.delete_consumer(subjects.DLQ_STREAM, durable)
    assert reply.status_code == 200, reply.text
    found = {d["durable"]: d for d in reply.json()["durables"]}
    probe = found[durable]
    info = (await js.stream_info(subjects.DLQ_STREAM)).state.messages
    assert (probe["stream"], probe["pending"], probe["lag"]) == (subjects.DLQ_STREAM, info, info)
    assert subjects.DLQ_STREAM in {s["name"] for s in reply.json()["streams"]}


async def test_usage_is_asked_for_the_keys_tenant_only(gateway: httpx.AsyncClient, nc: Client):
    asked: list[dict[str, Any]] = []
    tenant, other = TENANTS[3], TENANTS[4]
    growth = [{"source": "knowledge", "type": "semantic", "held": 3, "added": [{"day": "2026-11-20", "added": 2}]}]

    async def answer(msg: Msg) -> None:
        asked.append(json.loads(msg.data))
        row = {"tenant_id": tenant, "messages": 5, "vectors": 9, "memory_types": growth, "vectors_by_kind": {"fact": 3}}
        await msg.respond(json.dumps({"tenants": [row], "total": 1}).encode())

    sub = await nc.subscribe(subjects.OPS_USAGE, cb=answer)
    try:
        reply = await gateway.post("/v1/operator/usage", json={"tenant_id": tenant}, headers=auth(tenant))
        grown = await gateway.post(
            "/v1/operator/usage", json={"tenant_id": tenant, "growth_days": 30}, headers=auth(tenant)
        )
        foreign = await gateway.post(
            "/v1/operator/usage", json={"tenant_id": other, "growth_days": 30}, headers=auth(tenant)
        )
        too_long = await gateway.post(
            "/v1/operator/usage", json={"tenant_id": tenant, "growth_days": 367}, headers=auth(tenant)
        )
    finally:
        await sub.unsubscribe()
    assert reply.status_code == 200, reply.text
    assert (reply.json()["tenants"][0]["messages"], reply.json()["tenants"][0]["vectors"]) == (5, 9)
    assert grown.status_code == 200, grown.text
    assert grown.json()["tenants"][0]["memory_types"] == growth
    assert (foreign.status_code, too_long.status_code) == (403, 422), (foreign.text, too_long.text)
    # another tenant's usage is never asked for: the key's tenant only, with the growth window the body named
    assert [(a["tenant_ids"], a.get("growth_days", 0)) for a in asked] == [([tenant], 0), ([tenant], 30)]
