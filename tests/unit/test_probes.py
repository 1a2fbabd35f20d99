"""The probe server (mnemo/shared/probes.py): /healthz, /readyz from the phase and the checks, /metrics after
the collectors ran; a port already taken fails the start."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest

from mnemo.shared import probes as probes_module
from mnemo.shared.metrics import CONSUMER_PENDING
from mnemo.shared.probes import NotReady, Probes, probe_app, probe_server
from mnemo.shared.settings import ObserveSettings


def client(probes: Probes) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=probe_app(probes)), base_url="http://probe")


async def ok() -> str:
    return "fine"


async def refuses() -> str:
    raise NotReady("the database does not answer")


async def test_not_ready_until_serving_then_ready_when_every_check_passes():
    probes = Probes()
    probes.add_check("mongodb", ok)
    async with client(probes) as http:
        starting = await http.get("/readyz")
        assert starting.status_code == 503
        assert starting.json()["checks"] == {"phase": "starting", "mongodb": "ok: fine"}
        probes.phase = "serving"
        ready = await http.get("/readyz")
        assert (ready.status_code, ready.json()["status"]) == (200, "ready")
        assert (await http.get("/healthz")).json() == {"status": "alive", "phase": "serving"}


async def test_one_failing_check_makes_it_unready_and_says_why():
    probes = Probes()
    probes.phase = "serving"
    probes.add_check("nats", ok)
    probes.add_check("mongodb", refuses)
    async with client(probes) as http:
        reply = await http.get("/readyz")
    assert reply.status_code == 503
    assert reply.json()["checks"]["mongodb"] == "failed: the database does not answer"


async def test_a_hung_check_fails_within_the_timeout(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(probes_module, "CHECK_TIMEOUT_S", 0.05)

    async def hangs() -> str:
        await asyncio.sleep(60)
        return ""

    probes = Probes()
    probes.phase = "serving"
    probes.add_check("jetstream", hangs)
    async with client(probes) as http:
        reply = await asyncio.wait_for(http.get("/readyz"), 5)
    assert reply.status_code == 503
    assert reply.json()["checks"]["jetstream"].startswith("failed: no answer within")


async def test_standby_is_ready_and_stopping_is_not():
    probes = Probes()
    async with client(probes) as http:
        probes.phase = "standby"
        assert (await http.get("/readyz")).status_code == 200
        probes.phase = "stopping"
        assert (await http.get("/readyz")).status_code == 503


async def test_metrics_run_the_collectors_first_and_survive_a_failing_one():
    probes = Probes()

    async def pending() -> None:
        CONSUMER_PENDING.labels(stream="MNEMO_TEST", durable="probe_test").set(42)

    async def broken() -> None:
        raise RuntimeError("JetStream is away")

    probes.add_collector(broken)
    probes.add_collector(pending)
    async with client(probes) as http:
        reply = await http.get("/metrics")
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/plain")
    assert 'mnemo_consumer_pending_messages{durable="probe_test",stream="MNEMO_TEST"} 42.0' in reply.text


async def test_server_listens_on_a_free_port_and_refuses_a_taken_one():
    probes = Probes()
    async with probe_server(ObserveSettings(http_port=0), probes) as url:
        async with httpx.AsyncClient() as http:
            assert (await http.get(f"{url}/healthz")).status_code == 200
        port = int(url.rsplit(":", 1)[1])
        with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}"):
            async with probe_server(ObserveSettings(http_port=port), Probes()):
                pass
    with socket.socket() as s:  # stopped: the port is free again
        s.bind(("127.0.0.1", port))
