"""``mnemo cluster --secure`` as an operator starts it, light: the three NATS nodes and SecantusDB with one ingest
and one lore replica (the others at 0; tests/integration/test_secured_stack.py runs every service under its
user). The nodes form a cluster with TLS and the least-privilege users; the streams get three replicas as the
operators' user; a platform on node 2, with the generated password and CA, publishes a message that ingest (as
its own user) records and relays to the log, imports a lorebook, and cannot read the log itself."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from mnemo.runtime.nats_auth import ADMIN, PLATFORM
from mnemo.shared import subjects
from tests.integration.secured import NodeEndpoint, connected
from tests.integration.test_cluster import ClusterProcess
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]


LIGHT = "ingest=1,lore=1,embedding=0,summarizer=0,memory-extractor=0,context-assembler=0,memory=0"


class SecureCluster(ClusterProcess):
    def cli(self, *args: str) -> list[str]:
        argv = list(args)
        if "--replicas" in argv:
            argv[argv.index("--replicas") + 1] = LIGHT
        return super().cli(*argv, "--secure")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureCluster]:
    proc = SecureCluster(tmp_path_factory.mktemp("secure-cluster") / "data")
    proc.start()
    yield proc
    if proc.process is not None and proc.process.poll() is None:
        proc.stop()


async def test_a_platform_on_node_2_is_served_over_tls_as_its_own_user(cluster: SecureCluster) -> None:
    assert "secured: TLS" in cluster.output()
    node2 = NodeEndpoint(cluster.entry("nats-2")["url"], cluster.data_dir / "secure")
    async with connected(node2, ADMIN) as admin:
        info = await admin.nc.jetstream().stream_info(subjects.CHAT_STREAM)
        assert info.config.num_replicas == 3
        log_before = (await admin.nc.jetstream().stream_info(subjects.LOG_STREAM)).state.messages
    async with connected(node2, PLATFORM) as platform:
        message = {"tenant_id": "t1", "user_id": "u1", "conversation_id": "c1", "message_id": "m1", "role": "user",
                   "author_name": "Ilya", "content": "I brought my compass.", "created_at": "2026-11-01T18:00:00Z",
                   "bot_ids": ["maren"]}  # fmt: skip
        await platform.nc.jetstream().publish(subjects.MESSAGE_CREATED, json.dumps(message).encode())
        book = {"tenant_id": message["tenant_id"], "owner_user_id": message["user_id"], "name": "Compass lore",
                "data": {"entries": {"0": {"uid": 0, "key": ["compass"], "content": "It points home."}}}}  # fmt: skip
        reply = json.loads((await platform.nc.request(subjects.LORE_IMPORT, json.dumps(book).encode(), 60)).data)
        assert reply["entries"] == 1, reply
        platform.allowed()
        await platform.nc.subscribe(subjects.LOG_ALL)
        await platform.denied(f'Subscription to "{subjects.LOG_ALL}"')

    async with connected(node2, ADMIN) as admin:

        async def recorded() -> bool:  # ingest's and lore's events, relayed as their own users
            return (await admin.nc.jetstream().stream_info(subjects.LOG_STREAM)).state.messages >= log_before + 2

        await wait_until(recorded, "the message and the book are relayed to the log", 120, interval=0.5)
    assert cluster.stop() == 0
    logs = [(cluster.data_dir / "logs" / f"nats-{n}.log").read_text() for n in (1, 2, 3)]
    violations = [line for log in logs for line in log.splitlines() if "Violation" in line]
    assert violations != []  # the platform's attempt on the log; no service's
    assert all("user:platform" in line and subjects.LOG_ALL in line for line in violations), violations
