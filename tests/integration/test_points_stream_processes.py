"""No service shares a process without a Qdrant server: ingest, embedding and context-assembler replicas run as
separate OS processes (``python -m mnemo.services.<name>``) with ``MNEMO_VECTORS__MODE=stream``, each with its own
data directory, on their own nats-server and the session's SecantusDB.

A message is embedded once (by the embedding process) and retrieved by meaning from replica A's shard; A
stops, and replica B, started afterwards on an empty directory, answers its FIRST request with it: B built
its shard from the points stream (the read-your-writes wait covers its catch-up), no re-embedding.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nats
import pytest

from mnemo.runtime.servers import ChildServer, free_port, start_nats
from mnemo.shared import subjects
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
T, U, C = "t1", "u1", "c1"
DRAGON = "The dragon sleeps under the old mill, guarding a chest of silver."
FILLER = ["We bought bread at the market.", "The weather turned cold by noon.", "A bard sang about the harvest."]
REQUEST = {"tenant_id": T, "user_id": U, "conversation_id": C, "bot_id": "ada",
           "user_message": "Where does the dragon sleep?", "max_tokens": 3000}  # fmt: skip
READY = "serving on"


@pytest.fixture
def own_nats(tmp_path: Path) -> Iterator[ChildServer]:
    server = start_nats(tmp_path / "nats-own", port=free_port())
    yield server
    server.stop()


class Services:
    def __init__(self, tmp_path: Path, nats_url: str, mongo_url: str) -> None:
        self.tmp = tmp_path
        self.env = {
            **os.environ,
            "MNEMO_NATS_URL": nats_url,
            "MNEMO_MONGODB_URL": mongo_url,
            "MNEMO_MONGODB_DB": f"points_{uuid.uuid4().hex[:10]}",
            "MNEMO_KEK": base64.b64encode(os.urandom(32)).decode(),
            "MNEMO_VECTORS__MODE": "stream",
            "MNEMO_VECTORS__READ_WAIT_MS": "20000",
            "MNEMO_CONTEXT_ASSEMBLER__HISTORY_LIMIT": "2",
            "MNEMO_CONTEXT_ASSEMBLER__MIN_HISTORY": "2",
            "PYTHONUNBUFFERED": "1",
            "MNEMO_OBSERVE__HTTP_PORT": "0",  # its probe server on a free port
            "PYTHONPATH": str(ROOT),
        }
        self.running: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}

    def start(self, name: str, module: str) -> None:
        data_dir = self.tmp / name
        data_dir.mkdir(parents=True)
        log = data_dir / "out.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", module],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**self.env, "MNEMO_DATA_DIR": str(data_dir)},
                cwd=ROOT,
            )
        self.running[name] = (proc, log)
        deadline = time.monotonic() + 120
        while READY not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"{name} did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)

    def stop(self, name: str) -> None:
        proc, log = self.running.pop(name)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        assert "Traceback" not in log.read_text(errors="replace"), log.read_text(errors="replace")[-3000:]

    def stop_all(self) -> None:
        for name in list(self.running):
            proc, _ = self.running.pop(name)
            proc.kill()
            proc.wait()


def message(i: int, content: str) -> dict[str, Any]:
    return {
        "tenant_id": T, "user_id": U, "conversation_id": C, "message_id": f"m{i}", "role": "user",
        "author_name": "Mira", "content": content, "created_at": (T0 + timedelta(minutes=i)).isoformat(),
        "bot_ids": ["ada"],
    }  # fmt: skip


async def ask(nc: Any) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads(
        (await nc.request(subjects.CONTEXT_ASSEMBLE, json.dumps(REQUEST).encode(), 60)).data
    )
    return reply


async def test_embedding_and_assembler_replicas_in_their_own_processes(
    own_nats: ChildServer, mongo_url: str, tmp_path: Path
) -> None:
    services = Services(tmp_path, own_nats.url, mongo_url)
    nc = await nats.connect(own_nats.url)
    try:
        services.start("ingest", "mnemo.services.ingest")
        services.start("embedding", "mnemo.services.embedding")
        services.start("assembler-a", "mnemo.services.context_assembler")
        js = nc.jetstream()
        bot = {"tenant_id": T, "bot_id": "ada", "name": "Ada", "updated_at": T0.isoformat()}
        await js.publish(subjects.BOT_UPSERTED, json.dumps(bot).encode())
        for i, text in enumerate([DRAGON, *FILLER]):
            await js.publish(subjects.MESSAGE_CREATED, json.dumps(message(i, text)).encode())

        async def retrieved() -> bool:
            return DRAGON in (await ask(nc)).get("context", "")

        await wait_until(retrieved, "replica A retrieves the message by meaning", 120, interval=0.5)
        assert (tmp_path / "assembler-a" / "points-replica" / "mnemo").is_dir()  # A's own shard
        assert not (tmp_path / "embedding" / "points-replica").exists()  # the writer owns no shard
        assert not (tmp_path / "embedding" / "qdrant-edge").exists()
        services.stop("assembler-a")

        services.start("assembler-b", "mnemo.services.context_assembler")  # an empty directory
        reply = await ask(nc)  # the first request: B has caught up from the stream before searching
        assert reply["degraded"] == []
        assert DRAGON in reply["context"]
        services.stop("assembler-b")
        services.stop("embedding")
        services.stop("ingest")
    finally:
        services.stop_all()
        await nc.close()
