"""The HTTP gateway on a real nats-server, with responders standing in for the services on the same subjects:
API keys and tenants, request ids as ``Nats-Msg-Id`` (a retried event is stored once), the services' error
codes as HTTP statuses, no responders and timeouts, and the streamed export. (The gateway against the whole
stack: tests/e2e/test_gateway_e2e.py.)"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg

from mnemo.runtime.servers import free_port
from mnemo.services.gateway.app import create_app
from mnemo.services.gateway.settings import GatewaySettings
from mnemo.shared import subjects
from tests.integration.gateway_client import gateway_client

pytestmark = pytest.mark.integration

KEY, OTHER_KEY, ENGINE_KEY = "key-t1", "key-t2", "key-t1-engine"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture
async def gateway(nc: Client) -> AsyncIterator[httpx.AsyncClient]:
    settings = GatewaySettings(api_keys={KEY: "t1", OTHER_KEY: "t2", ENGINE_KEY: "t1 engine"}, request_timeout_s=1.0)
    async with gateway_client(settings, nc) as client:
        yield client


async def respond(nc: Client, subject: str, answer: Callable[[Msg], Any], seen: list[Msg] | None = None) -> Any:
    async def handler(msg: Msg) -> None:
        if seen is not None:
            seen.append(msg)
        await msg.respond(json.dumps(answer(msg)).encode())

    return await nc.subscribe(subject, cb=handler)


def message(message_id: str, tenant: str = "t1") -> dict[str, Any]:
    return {"tenant_id": tenant, "user_id": "u1", "conversation_id": "c1", "message_id": message_id,
            "role": "user", "content": "hello", "created_at": "2026-11-01T18:00:00Z"}  # fmt: skip


async def test_a_retried_event_with_the_same_request_id_is_stored_once(gateway: httpx.AsyncClient, nc: Client):
    key = f"retry-{uuid.uuid4().hex}"
    body = message(key)
    first = await gateway.post("/v1/chat/message/created", json=body, headers=AUTH | {"Idempotency-Key": key})
    again = await gateway.post("/v1/chat/message/created", json=body, headers=AUTH | {"Idempotency-Key": key})
    assert first.status_code == again.status_code == 202, first.text
    assert (first.json()["duplicate"], again.json()["duplicate"]) == (False, True)
    assert first.json()["seq"] == again.json()["seq"]
    assert first.json()["msg_id"] == f"t1:{key}" == first.headers["X-Request-Id"]
    stored = await nc.jetstream().get_msg(subjects.CHAT_STREAM, first.json()["seq"])
    assert stored.headers is not None
    assert stored.headers["Nats-Msg-Id"] == f"t1:{key}"
    assert stored.subject == subjects.MESSAGE_CREATED
    assert json.loads(stored.data or b"")["message_id"] == key
    # Without a request id, the same body is still one event; another body is another.
    plain = [await gateway.post("/v1/chat/message/created", json=b, headers=AUTH) for b in (body, body, message("x"))]
    assert [r.json()["duplicate"] for r in plain] == [False, True, False]


async def test_keys_and_tenants(gateway: httpx.AsyncClient):
    body = message("m-auth")
    missing = await gateway.post("/v1/chat/message/created", json=body)
    unknown = await gateway.post("/v1/chat/message/created", json=body, headers={"Authorization": "Bearer nope"})
    other = await gateway.post("/v1/chat/message/created", json=body, headers={"Authorization": f"Bearer {OTHER_KEY}"})
    invalid = await gateway.post("/v1/chat/message/created", json=body | {"role": "wizard"}, headers=AUTH)
    assert (missing.status_code, unknown.status_code, other.status_code, invalid.status_code) == (401, 401, 403, 422)
    assert other.json()["error"]["code"] == "forbidden"
    assert invalid.json()["error"]["code"] == "bad_request"
    assert "role" in invalid.json()["error"]["message"]
    unknown_field = {"tenant_id": "t1", "user_id": "u1", "memory_id": "m", "memory": "x"}
    refused = await gateway.post("/v1/memory/delete", json=unknown_field, headers=AUTH)
    assert refused.status_code == 422, "an RPC body refuses unknown fields, as the service does"


@pytest.mark.parametrize(
    ("code", "status"),
    [("not_found", 404), ("bad_request", 400), ("rate_limited", 429), ("internal", 502), ("odd", 502)],
)
async def test_service_error_codes_become_http_statuses(gateway: httpx.AsyncClient, nc: Client, code: str, status: int):
    sub = await respond(nc, subjects.MEMORY_DELETE, lambda _: {"error": {"code": code, "message": f"said {code}"}})
    try:
        body = {"tenant_id": "t1", "user_id": "u1", "memory_id": "m1"}
        reply = await gateway.post("/v1/memory/delete", json=body, headers=AUTH)
    finally:
        await sub.unsubscribe()
    assert reply.status_code == status
    assert reply.json() == {"error": {"code": code, "message": f"said {code}"}}


async def test_a_reply_is_passed_through_and_the_service_sees_the_checked_body(gateway: httpx.AsyncClient, nc: Client):
    seen: list[Msg] = []
    answer = {"memory_id": "m1", "deleted": True, "legacy_ids": []}
    sub = await respond(nc, subjects.MEMORY_DELETE, lambda _: answer, seen)
    try:
        body = {"tenant_id": "t1", "user_id": "u1", "memory_id": "m1"}
        reply = await gateway.post("/v1/memory/delete", json=body, headers=AUTH | {"X-Request-Id": "req-7"})
    finally:
        await sub.unsubscribe()
    assert (reply.status_code, reply.json()) == (200, answer)
    assert json.loads(seen[0].data) == body
    assert seen[0].headers is not None
    assert seen[0].headers["Nats-Msg-Id"] == "t1:req-7"


async def test_no_service_is_503_and_no_reply_in_time_is_504(gateway: httpx.AsyncClient, nc: Client):
    body = {"tenant_id": "t1", "user_id": "u1", "fact_id": "f1"}
    nobody = await gateway.post("/v1/memory/unpromote", json=body, headers=AUTH)
    silent = await nc.subscribe(subjects.MEMORY_UNPROMOTE, cb=_ignore)
    try:
        slow = await gateway.post("/v1/memory/unpromote", json=body, headers=AUTH)
    finally:
        await silent.unsubscribe()
    assert (nobody.status_code, nobody.json()["error"]["code"]) == (503, "unavailable")
    assert nobody.headers["Retry-After"] == "1"
    assert (slow.status_code, slow.json()["error"]["code"]) == (504, "timeout")


async def _ignore(_msg: Msg) -> None:
    return None


async def test_a_large_export_is_streamed_in_chunks_and_reads_as_the_reply(gateway: httpx.AsyncClient, nc: Client):
    app = gateway._transport.app  # type: ignore[attr-defined]
    entries = {str(i): {"uid": i, "key": [f"k{i}"], "content": "x" * 500} for i in range(400)}
    answer = {"lorebook_id": "book-1", "name": "Big", "data": {"entries": entries}}
    sub = await respond(nc, subjects.LORE_EXPORT, lambda _: answer)
    body = json.dumps({"tenant_id": "t1", "lorebook_id": "book-1"}).encode()
    sent: list[dict[str, Any]] = []

    received = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if received.is_set():  # the client stays connected: wait until the response is done (then cancelled)
            await asyncio.Event().wait()
        received.set()
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(event: dict[str, Any]) -> None:
        sent.append(event)

    headers = [(b"authorization", f"Bearer {KEY}".encode()), (b"content-type", b"application/json")]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/v1/lore/export", "raw_path": b"/v1/lore/export", "query_string": b"", "headers": headers,
             "server": ("gateway", 80), "client": ("test", 1), "root_path": "", "app": app}  # fmt: skip
    try:
        await app(scope, receive, send)  # raw ASGI: httpx's test transport would join the body's parts
    finally:
        await sub.unsubscribe()
    start = sent[0]
    parts = [e["body"] for e in sent[1:] if e["type"] == "http.response.body" and e.get("body")]
    assert start["status"] == 200
    assert (b"content-disposition", b'attachment; filename="book-1.json"') in start["headers"]
    assert len(parts) > 3, "the body is sent in several parts"
    assert json.loads(b"".join(parts)) == answer


async def test_a_key_over_its_rate_gets_429_with_retry_after(nc: Client):
    settings = GatewaySettings(api_keys={KEY: "t1", OTHER_KEY: "t2"}, rate_per_s=0.5, burst=2)
    app = create_app(settings, [], nc=nc)
    transport = httpx.ASGITransport(app=app)
    async with app.router.lifespan_context(app), httpx.AsyncClient(transport=transport, base_url="http://g") as client:
        sent = [await client.post("/v1/chat/message/created", json=message(f"rl-{i}"), headers=AUTH) for i in range(3)]
        other_key = {"Authorization": f"Bearer {OTHER_KEY}"}
        other = await client.post("/v1/chat/message/created", json=message("rl-b", "t2"), headers=other_key)
    assert [r.status_code for r in sent] == [202, 202, 429]
    assert sent[2].json()["error"]["code"] == "rate_limited"
    assert sent[2].headers["Retry-After"] == "2"
    assert other.status_code == 202, "each key has its own bucket"


async def test_health_says_whether_nats_is_connected(gateway: httpx.AsyncClient):
    reply = await gateway.get("/healthz")
    assert (reply.status_code, reply.json()) == (200, {"status": "ok"})


def test_the_gateway_runs_alone_and_stops_on_sigint(nats_url: str, tmp_path):
    """`python -m mnemo.services.gateway`: only NATS needed; it prints where it listens, serves, and stops on Ctrl-C."""
    probes = f"http://127.0.0.1:{free_port()}"
    env = {**os.environ, "MNEMO_NATS_URL": nats_url, "MNEMO_GATEWAY__PORT": "0", "PYTHONUNBUFFERED": "1",
           "MNEMO_OBSERVE__HTTP_PORT": probes.rsplit(":", 1)[1], "MNEMO_GATEWAY__API_KEYS": json.dumps({KEY: "t1"})}  # fmt: skip
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "mnemo.services.gateway"], cwd=root, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("mnemo gateway listening on http://127.0.0.1:"), line
        url = line.split()[4]
        assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}
        unauthorized = httpx.post(f"{url}/v1/memory/list", json={"tenant_id": "t1", "user_id": "u1"})
        assert unauthorized.status_code == 401
        # Its probe server: ready once NATS and JetStream answer; the request above counted by route and status.
        ready = httpx.get(f"{probes}/readyz")
        assert ready.status_code == 200, ready.text
        assert set(ready.json()["checks"]) == {"phase", "nats", "jetstream"}
        metrics = httpx.get(f"{probes}/metrics").text
        assert 'mnemo_gateway_requests_total{route="/v1/memory/list",status="401"} 1.0' in metrics
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(30)
    assert code == 0


async def test_the_memory_apis_engine_calls_take_a_key_with_the_engine_right(gateway: httpx.AsyncClient, nc: Client):
    seen: list[Msg] = []
    await respond(nc, subjects.MEMORY_ENGINE_REMEMBER, lambda _: {"memory_id": "m", "created": True, "version": 1,
                                                                   "title": "t"}, seen)  # fmt: skip
    body = {"tenant_id": "t1", "user_id": "gm", "owner_namespace": "campaign:k", "type": "declarative",
            "content": "The bridge is out."}  # fmt: skip
    refused = await gateway.post("/v1/memory/engine/remember", json=body, headers=AUTH)
    granted = await gateway.post(
        "/v1/memory/engine/remember", json=body, headers={"Authorization": f"Bearer {ENGINE_KEY}"}
    )
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "forbidden"
    assert "engine" in refused.json()["error"]["message"]
    assert granted.status_code == 200, granted.text
    assert len(seen) == 1
