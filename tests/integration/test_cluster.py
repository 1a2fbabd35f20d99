"""``mnemo cluster`` started as its own process, as an operator would, on free ports in a temporary directory.

One replica of each service but two context-assemblers (12 processes in all, with the three NATS nodes and
SecantusDB) keeps it light;
the default topology's counts are checked in tests/unit/test_cluster_topology.py. Checked: pids.json lists
every process with a live pid; the three nodes route to each other and agree on a JetStream meta leader; the
streams have three replicas; a platform connected to node 2 publishes messages and gets them back in the
assembled history; a killed replica is reported, stays down, and ``mnemo cluster restart`` brings it back
(then a platform on node 3 is served); an old message is retrieved by meaning from either context-assembler
replica (vectors in stream mode, each replica its own shard), one of them restarted on its shard; Ctrl-C stops
everything.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.errors import NoRespondersError

from mnemo.runtime import catalog
from mnemo.runtime.servers import free_port, pid_alive
from mnemo.shared import subjects
from mnemo.shared.streams import STREAMS
from tests.e2e.scenes import turn
from tests.waiting import request_reply, wait_for_stack

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
READY = "mnemo cluster is serving"
SERVICES = tuple(service.name for service in catalog.SERVICES)
ONE_EACH = ",".join(f"{name}=1" for name in SERVICES if name != "context-assembler") + ",context-assembler=2"
# A short history window, so an old message can only reach the context through the vector search.
ENV = {**os.environ, "MNEMO_CONTEXT_ASSEMBLER__HISTORY_LIMIT": "4"}
T0 = datetime(2026, 11, 1, 20, 0, tzinfo=UTC)


class ClusterProcess:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.ports = [free_port() for _ in range(4)]
        self.out = data_dir.parent / "cluster.out"
        self.process: subprocess.Popen[bytes] | None = None
        self.start_seconds = 0.0

    def cli(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "mnemo.runtime.cli", "cluster", *args, "--data-dir", str(self.data_dir)]

    def start(self, timeout: float = 300.0) -> None:
        argv = self.cli(
            "--nats-url",
            f"nats://127.0.0.1:{self.ports[0]}",
            "--nats-ports",
            f"{self.ports[1]},{self.ports[2]}",
            "--mongodb-url",
            f"mongodb://127.0.0.1:{self.ports[3]}/?directConnection=true",
            "--replicas",
            ONE_EACH,
            "--stop-timeout",
            "20",
        )
        started = time.monotonic()
        with open(self.out, "wb") as out:
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=ENV)
        while READY not in self.output():
            if self.process.poll() is not None or time.monotonic() - started > timeout:
                self.process.kill()
                raise RuntimeError(f"mnemo cluster did not start:\n{self.output()[-4000:]}")
            time.sleep(0.2)
        self.start_seconds = time.monotonic() - started

    def output(self) -> str:
        return self.out.read_text(errors="replace")

    def pids(self) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads((self.data_dir / "run" / "pids.json").read_text())
        return doc

    def entry(self, name: str, replica: int | None = None) -> dict[str, Any]:
        return next(p for p in self.pids()["processes"] if p["name"] == name and p.get("replica") == replica)

    def stop(self, timeout: float = 120.0) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterProcess]:
    proc = ClusterProcess(tmp_path_factory.mktemp("cluster") / "data")
    proc.start()
    print(f"\nmnemo cluster ready in {proc.start_seconds:.1f}s")
    yield proc
    if proc.process is not None and proc.process.poll() is None:  # a test failed before the stop test
        proc.stop()


def _monitor(entry: dict[str, Any], endpoint: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{entry['monitor']}/{endpoint}", timeout=5) as response:
        data: dict[str, Any] = json.loads(response.read())
    return data


def test_pids_json_lists_every_process_alive(cluster: ClusterProcess):
    doc = cluster.pids()
    processes = doc["processes"]
    assert pid_alive(doc["supervisor"])
    assert {(p["name"], p["kind"], p.get("replica")) for p in processes} == {
        *((name, "service", 1) for name in SERVICES),
        ("context-assembler", "service", 2),
        ("nats-1", "server", None),
        ("nats-2", "server", None),
        ("nats-3", "server", None),
        ("secantusd", "server", None),
    }
    assert all(pid_alive(p["pid"]) for p in processes), processes
    assert cluster.entry("nats-1")["url"] == f"nats://127.0.0.1:{cluster.ports[0]}"
    assert all(url in cluster.output() for url in (cluster.entry(f"nats-{i}")["url"] for i in (1, 2, 3)))


async def test_the_nodes_form_one_cluster_and_the_streams_have_three_replicas(cluster: ClusterProcess):
    nodes = [cluster.entry(f"nats-{i}") for i in (1, 2, 3)]
    leaders = set()
    for node in nodes:
        peers = {r["remote_name"] for r in _monitor(node, "routez")["routes"]}
        assert peers == {n["name"] for n in nodes} - {node["name"]}
        jsz = _monitor(node, "jsz")
        assert jsz["meta_cluster"]["cluster_size"] == 3
        leaders.add(jsz["meta_cluster"]["leader"])
    assert len(leaders) == 1
    assert None not in leaders
    nc = await nats.connect(nodes[2]["url"])
    try:
        js = nc.jetstream()
        for name, _ in STREAMS:
            info = await js.stream_info(name)
            assert info.config.num_replicas == 3
            assert info.cluster is not None
            assert len(info.cluster.replicas or []) == 2, info.cluster
    finally:
        await nc.drain()


async def _talk(url: str, conv: str, lines: list[str]) -> dict[str, Any]:
    """A platform on ``url`` publishes ``lines`` to ``conv``, then polls the context until they all are in it."""
    nc = await nats.connect(url)
    try:
        assert nc.connected_url is not None
        assert nc.connected_url.port == int(url.rsplit(":", 1)[1])
        js = nc.jetstream()
        for i, content in enumerate(lines):
            body = turn(
                i,
                content,
                T0 + timedelta(minutes=i),
                tenant="t-cluster",
                user="u-1",
                conv=conv,
                message_id=f"{conv}-m{i}",
                persona=("p-1", "Ada"),
                bot=("bot-1", "Mirelle"),
            )
            await js.publish(
                subjects.MESSAGE_CREATED, json.dumps(body).encode(), headers={"Nats-Msg-Id": body["message_id"]}
            )
        request = {
            "tenant_id": "t-cluster",
            "user_id": "u-1",
            "conversation_id": conv,
            "bot_id": "bot-1",
            "persona_id": "p-1",
            "user_message": "What happened?",
            "max_tokens": 800,
        }
        reply: dict[str, Any] = {}

        async def has_all() -> bool:
            nonlocal reply
            msg = await request_reply(nc, subjects.CONTEXT_ASSEMBLE, json.dumps(request).encode(), timeout=15)
            reply = json.loads(msg.data)
            return all(line in reply.get("context", "") for line in lines)

        await wait_for_stack(has_all, f"the context of {conv} holds its {len(lines)} messages", timeout=120)
        return reply
    finally:
        await nc.drain()


async def test_a_platform_on_node_2_gets_its_messages_back_in_the_context(cluster: ClusterProcess):
    lines = [
        "The ferry left the harbour an hour late.",
        "Ada counted the lanterns on the far pier: eleven.",
        "Mirelle said the twelfth lantern had been stolen last winter.",
    ]
    reply = await _talk(cluster.entry("nats-2")["url"], "conv-node2", lines)
    assert "error" not in reply


async def test_a_killed_replica_stays_down_until_restarted(cluster: ClusterProcess):
    old = cluster.entry("ingest", 1)["pid"]
    os.kill(old, signal.SIGKILL)
    await wait_for_stack(lambda: "exit_code" in cluster.entry("ingest", 1), "pids.json records ingest-1's exit")
    assert "ingest-1 (pid" in cluster.output()
    assert "not restarted" in cluster.output()
    await asyncio.sleep(2)
    assert not pid_alive(old)
    assert cluster.entry("ingest", 1)["pid"] == old  # nothing started another
    done = await asyncio.to_thread(
        subprocess.run, cluster.cli("restart", "ingest", "1"), cwd=ROOT, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    new = cluster.entry("ingest", 1)
    assert new["pid"] != old
    assert pid_alive(new["pid"])
    assert "exit_code" not in new
    await _talk(cluster.entry("nats-3")["url"], "conv-node3", ["After the restart the bell rang twice."])


OLD_LINES = [
    "Ada hid the brass telescope inside the lighthouse keeper's boot.",
    "The tide came in fast over the causeway.",
    "Mirelle sold two baskets of smoked herring.",
    "A gull stole a biscuit from the fisherman's cart.",
    "The church bell rang for the evening mass.",
    "Rain drummed on the slate roofs all night.",
    "The baker's dog slept under the bench.",
    "Someone lit a fire on the northern hill.",
]


async def _retrieved_once(url: str) -> bool:
    """Whether a context request on ``url`` brings the first line back through the vector search."""
    nc = await nats.connect(url)
    try:
        request = {"tenant_id": "t-cluster", "user_id": "u-1", "conversation_id": "conv-old", "bot_id": "bot-1",
                   "persona_id": "p-1", "user_message": "Where is the brass telescope hidden?", "max_tokens": 2000}  # fmt: skip
        try:
            msg = await request_reply(nc, subjects.CONTEXT_ASSEMBLE, json.dumps(request).encode(), timeout=15)
        except (NoRespondersError, TimeoutError):
            return False  # the replica left is still starting (it loads the model, then catches up)
        reply = json.loads(msg.data)
        retrieved = [s for s in reply.get("sections", []) if s["name"] == "retrieved"]
        return bool(retrieved) and "brass telescope" in retrieved[0]["text"]
    finally:
        await nc.drain()


async def _kill(cluster: ClusterProcess, name: str, replica: int) -> None:
    os.kill(cluster.entry(name, replica)["pid"], signal.SIGKILL)
    await wait_for_stack(
        lambda: "exit_code" in cluster.entry(name, replica), f"pids.json records {name}-{replica}'s exit"
    )


async def _restart(cluster: ClusterProcess, name: str, replica: int) -> None:
    done = await asyncio.to_thread(
        subprocess.run,
        cluster.cli("restart", name, str(replica)),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr


async def test_old_messages_are_retrieved_from_either_context_assembler(cluster: ClusterProcess):
    """Each replica answers from its own shard, fed from the points stream: with one replica down, the other
    retrieves the old message; then the same with the roles swapped, the restarted one on its own shard."""
    await _talk(cluster.entry("nats-1")["url"], "conv-old", OLD_LINES)
    url = cluster.entry("nats-2")["url"]
    for down, up in ((1, 2), (2, 1)):
        await _kill(cluster, "context-assembler", down)  # only replica `up` is subscribed now
        await wait_for_stack(lambda: _retrieved_once(url), f"context-assembler {up} retrieves the old message")
        await _restart(cluster, "context-assembler", down)


def test_a_second_cluster_on_the_same_data_is_refused(cluster: ClusterProcess):
    before = cluster.pids()
    done = subprocess.run(
        cluster.cli("--nats-url", f"nats://127.0.0.1:{free_port()}"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "already runs" in done.stderr
    assert cluster.pids() == before


def test_ctrl_c_stops_every_process(cluster: ClusterProcess):
    pids = [p["pid"] for p in cluster.pids()["processes"]]
    assert cluster.stop() == 0, cluster.output()[-4000:]
    deadline = time.monotonic() + 10
    while any(pid_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in pids if pid_alive(pid)] == []
    assert "stopped." in cluster.output()
