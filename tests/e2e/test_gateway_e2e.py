"""The HTTP gateway in front of the whole embedded stack (`mnemo run --gateway` as a process): a scene posted
over HTTP comes back as a context; the `curl` blocks of docs/running.md run as written; schemathesis drives every
operation of the gateway's own OpenAPI document, with the real services behind NATS, and finds no 5xx.
Plain HTTP (httpx, curl) and the stack's log for its URL, no project imports beyond the test helpers."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.e2e.scenes import turn
from tests.e2e.stackproc import StackProcess

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
DOC_URL = "http://127.0.0.1:8080"
KEYS = '{"dev-key-1": "t1", "gw-key": "gw-tenant", "fuzz-key": "fuzz-tenant"}'
GW, FUZZ = {"Authorization": "Bearer gw-key"}, {"Authorization": "Bearer fuzz-key"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackProcess]:
    env = {"MNEMO_GATEWAY__PORT": "0", "MNEMO_GATEWAY__API_KEYS": KEYS, "MNEMO_GATEWAY__REQUEST_TIMEOUT_S": "20"}
    proc = StackProcess(Path(tmp_path_factory.mktemp("gateway-stack")), env=env, args=("--gateway",))
    proc.start()
    yield proc
    code = proc.stop()
    assert code == 0, f"stack exited with {code}:\n{proc.log_tail()}"


@pytest.fixture(scope="module")
def http(stack: StackProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.gateway_url, timeout=30) as client:
        yield client


def until(http: httpx.Client, path: str, body: dict[str, Any], ready: Any, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        reply = http.post(path, json=body, headers=GW)
        assert reply.status_code == 200, reply.text
        if ready(reply.json()) or time.monotonic() > deadline:
            return dict(reply.json())
        time.sleep(0.5)


def test_a_scene_posted_over_http_comes_back_as_a_context(http: httpx.Client):
    bot = {"tenant_id": "gw-tenant", "bot_id": "sage", "name": "Sage", "system_prompt": "You keep the lighthouse.",
           "updated_at": "2026-10-01T19:00:00Z"}  # fmt: skip
    assert http.post("/v1/chat/bot/upserted", json=bot, headers=GW).status_code == 202
    lines = ["The lighthouse lamp runs on whale oil.", "Then we need oil before the storm.", "Bring the blue lantern."]
    for i, line in enumerate(lines):
        msg = turn(i, line, _at(i), tenant="gw-tenant", user="u1", conv="c1", message_id=f"m{i}",
                   persona=("p1", "Alex"), bot=("sage", "Sage"))  # fmt: skip
        sent = http.post("/v1/chat/message/created", json=msg, headers=GW | {"Idempotency-Key": f"m{i}"})
        assert (sent.status_code, sent.json()["duplicate"]) == (202, False), sent.text
    again = http.post("/v1/chat/message/created", json=msg, headers=GW | {"Idempotency-Key": f"m{i}"})
    assert again.json()["duplicate"] is True
    ask = {"tenant_id": "gw-tenant", "user_id": "u1", "conversation_id": "c1", "bot_id": "sage",
           "user_message": "What did I ask you to bring?", "max_tokens": 2000}  # fmt: skip
    reply = until(http, "/v1/context/assemble", ask, lambda r: lines[-1] in r["context"])
    assert all(line in reply["context"] for line in lines)
    assert "You keep the lighthouse." in reply["messages"][0]["content"]
    assert [s["name"] for s in reply["sections"]][-1] == "history"
    other = http.post("/v1/context/assemble", json=ask | {"tenant_id": "fuzz-tenant"}, headers=GW)
    assert other.status_code == 403


def _at(i: int) -> Any:
    from datetime import UTC, datetime, timedelta

    return datetime(2026, 10, 1, 20, 0, tzinfo=UTC) + timedelta(minutes=i)


def documented_curl_blocks() -> list[str]:
    """The ```sh blocks with curl in the HTTP gateway section of docs/running.md."""
    text = (ROOT / "docs" / "running.md").read_text()
    section = text.split("\n## HTTP gateway\n", 1)[1].split("\n## ", 1)[0]
    return [b for b in re.findall(r"```sh\n(.*?)```", section, flags=re.S) if "curl" in b]


def test_the_documented_curl_examples_work(stack: StackProcess, http: httpx.Client, tmp_path: Path):
    blocks = documented_curl_blocks()
    assert len(blocks) >= 3
    for block in blocks:
        script = block.replace(DOC_URL, stack.gateway_url)
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, f"{block}\nexit {done.returncode}\n{done.stdout}\n{done.stderr}"
        assert '"error"' not in done.stdout or "forbidden" in done.stdout, done.stdout
    assert '"Kestrel"' in (tmp_path / "kestrel.json").read_text()
    ask = {"tenant_id": "t1", "user_id": "u1", "conversation_id": "c1", "bot_id": "maren",
           "user_message": "Do you remember my compass?", "max_tokens": 2000}  # fmt: skip
    deadline = time.monotonic() + 90
    while "brass compass" not in (context := http.post("/v1/context/assemble", json=ask,
                                                        headers={"Authorization": "Bearer dev-key-1"}).json())[
        "context"] and time.monotonic() < deadline:  # fmt: skip
        time.sleep(0.5)
    assert "brass compass" in context["context"]
    assert "Captain Maren Voss" in context["context"]


def _document() -> dict[str, Any]:
    """The gateway's OpenAPI document as the app builds it (the served one is compared with it below)."""
    from mnemo.services.gateway.app import create_app
    from mnemo.services.gateway.settings import GatewaySettings

    return create_app(GatewaySettings(), []).openapi()


SCHEMA = schemathesis.openapi.from_dict(_document())
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]


def test_the_served_document_is_the_apps(http: httpx.Client):
    assert http.get("/openapi.json").json() == _document()


@pytest.mark.parametrize(
    ("operation", "mode"),
    [
        pytest.param(op, mode, id=f"{op.label}-{mode}")
        for op in OPERATIONS
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
        if mode == GenerationMode.POSITIVE or op.label != "GET /healthz"  # it has no input to make invalid
    ],
)
def test_schemathesis_finds_no_server_error(stack: StackProcess, operation: Any, mode: GenerationMode) -> None:
    """Every operation, valid and invalid bodies and headers, against the real services; the tenant is set to
    the key's (else nearly every case would stop at 403 before reaching a service). Also checked: each status
    and body is one the document declares."""
    checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def run(case: Any) -> None:
        if isinstance(case.body, dict) and isinstance(case.body.get("tenant_id"), str):
            case.body["tenant_id"] = "fuzz-tenant"
        case.call_and_validate(base_url=stack.gateway_url, headers=FUZZ, checks=checks, timeout=60)

    run()
