"""`make chaos`: faults under load on `mnemo cluster`, then what was lost, duplicated or reordered.

A platform-like publisher (every node's URL, reconnecting for ever) sends messages to several conversations, each
conversation's messages one after the other with ``Nats-Msg-Id`` and retried until JetStream acknowledges them,
while a client keeps asking for contexts. Meanwhile, in turn: a random replica of each service is killed with
SIGKILL and restarted (``mnemo cluster restart``), a NATS node is killed and restarted, SecantusDB is killed,
left down for ``--db-down`` seconds and restarted. Then the publisher stops, the suite waits until every durable has
acknowledged everything, and checks, reading the event log (the cluster's own key decrypts it):

- ``lost``: acknowledged messages that were never recorded; ``duplicated``: recorded more than once;
  ``out_of_order``: messages recorded at another position than the order their conversation published them in;
- ``duplicate_summaries``: active summaries of the same range, type and audience more than once;
- ``duplicate_facts``: facts the bot learned twice from one message, folded into two consolidations, or current
  twice with the same text (``bench/chaos_checks.py``); ``facts`` and ``consolidations`` say how many there were;
- ``dead_letters``: messages in the DLQ stream (all input is valid, so any is a failure);
- ``degraded_final``: conversations whose context, asked once everything is processed and every shard has caught
  up, names a degraded part on each of ``FINAL_ASKS`` asks (a context degraded by load alone is answered whole
  on the next ask); ``degraded_final_first_ask`` counts those degraded on the first ask (reported, not a failure);
- ``missing_points``: per context-assembler replica, recorded messages whose point is not in its index shard
  (counted once every replica has applied the whole points stream and the cluster stopped), summed;
- ``unrelayed`` (reported, not a failure): events in the log that the outbox relay never confirmed published
  (an intent, no receipt) once the final contexts were answered; a run that names any prints them (type, stream,
  version, event id), to search the kept logs for where the publish was lost;
- ``answered_share`` and ``p95_ms`` of the context requests made during the faults (5 s deadline each).

Ends with one JSON line; exits 1 when lost, duplicated or out_of_order is not 0, dead letters, duplicate
summaries or duplicate facts exist, a final context is degraded, a replica's shard misses points, or fewer than 95 % of the context requests were answered. ``--quick`` is the CI size.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nats
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from bench.chaos_checks import (
    compare,
    displaced,
    duplicate_summaries,
    event_log,
    fact_counts,
    recorded,
    unrelayed,
)
from bench.cluster_proc import ROOT, cluster
from bench.common import machine, print_result
from mnemo.runtime.catalog import SERVICES
from mnemo.shared import subjects
from mnemo.shared.embedders.bundled import DIMENSIONS
from mnemo.shared.lease import LEASE_BUCKET
from mnemo.shared.settings import Settings
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.edge import EdgeVectorIndex
from mnemo.shared.vectors.factory import REPLICA_DIR
from mnemo.shared.vectors.follower import STATE_FILE
from mnemo.shared.vectors.port import VectorFilter
from mnemo_client.wire.keyed import subject_token

TENANT, USER, BOT = "t-chaos", "u-chaos", "bot-chaos"
T0 = datetime(2026, 11, 1, 20, 0, tzinfo=UTC)
QUICK_REPLICAS = "ingest=2,embedding=1,summarizer=1,memory-extractor=1,context-assembler=2,lore=1,memory=1"
# Summaries early and often, and a small cap on each character's facts so that they are consolidated often too:
# the faults hit summarizing and consolidating; extractive summaries and pattern facts need no LLM.
ENV = {"MNEMO_SUMMARIZER__FIRST_AT": "5", "MNEMO_SUMMARIZER__EVERY": "10", "MNEMO_MEMORY_EXTRACTOR__CAP": "12"}
#: What the user says they have, one every other user turn: the bot learns ``Ilya has a <thing>.`` (the memory
#: extractor's pattern facts), so facts are learned, deduplicated and consolidated while the faults go on.
THINGS = ("brass telescope", "green parrot", "silver compass", "cracked violin", "wool scarf", "leather journal",
          "tin whistle", "spyglass of oak", "map of the northern isles", "pocket watch", "jar of honey",
          "broken lute", "red umbrella", "deck of cards", "copper kettle", "wooden chess set")  # fmt: skip


@dataclass
class Published:
    acked: dict[str, list[str]] = field(default_factory=dict)  # conversation -> message ids, in publish order
    retries: int = 0


@dataclass
class Asked:
    latencies_ms: list[float] = field(default_factory=list)
    failed: int = 0
    degraded: int = 0

    @property
    def total(self) -> int:
        return len(self.latencies_ms) + self.failed


def body(conv: str, k: int) -> bytes:
    return json.dumps(
        {
            "tenant_id": TENANT,
            "user_id": USER,
            "conversation_id": conv,
            "message_id": f"{conv}-m{k:05d}",
            "role": "user" if k % 2 == 0 else "assistant",
            "author_id": "persona-chaos" if k % 2 == 0 else BOT,
            "author_name": "Ilya" if k % 2 == 0 else "Maren",
            "content": f"In {conv}, turn {k}: the lantern number {k} swung over the deck of the airship."
            + (f" I have a {THINGS[(k // 4 + int(conv[1:])) % len(THINGS)]}." if k % 4 == 0 else ""),
            "created_at": (T0 + timedelta(seconds=k)).isoformat(),
            "bot_ids": [BOT],
        }
    ).encode()


async def publish_until_acked(js: JetStreamContext, subject: str, data: bytes, msg_id: str, out: Published) -> None:
    """A platform's publish: the same ``Nats-Msg-Id`` again until JetStream acknowledges (a duplicate ack counts)."""
    while True:
        try:
            await js.publish(subject, data, headers={"Nats-Msg-Id": msg_id}, timeout=5)
            return
        except Exception:  # timeout, no responders, connection lost: the platform retries
            out.retries += 1
            await asyncio.sleep(0.5)


def subject_of(conv: str) -> str:
    """Half the conversations on the v1 subject (old clients, through ingest's v1 router), half on their keyed
    subject (mnemo_client.wire.keyed): both paths under the same faults."""
    if int(conv[1:]) % 2:
        return subjects.keyed(subjects.MESSAGE_CREATED, subject_token(TENANT), subject_token(conv))
    return subjects.MESSAGE_CREATED


async def publisher(
    js: JetStreamContext, conversations: list[str], rate: float, stop: asyncio.Event, out: Published
) -> None:
    """Until ``stop``: each conversation's next message once the previous one is acknowledged (``out.acked``)."""
    bot = {"tenant_id": TENANT, "bot_id": BOT, "name": "Captain Maren Voss", "updated_at": T0.isoformat()}
    await publish_until_acked(js, subjects.BOT_UPSERTED, json.dumps(bot).encode(), "chaos-bot", out)

    async def one_conversation(conv: str) -> None:
        k = 0
        while not stop.is_set():
            msg_id = f"{conv}-m{k:05d}"
            await publish_until_acked(js, subject_of(conv), body(conv, k), msg_id, out)
            out.acked[conv].append(msg_id)
            k += 1
            await asyncio.sleep(len(conversations) / rate)

    await asyncio.gather(*(one_conversation(conv) for conv in conversations))


def context_request(conv: str, max_tokens: int = 1500) -> bytes:
    request = {"tenant_id": TENANT, "user_id": USER, "conversation_id": conv, "bot_id": BOT,
               "user_message": "Which lantern swung over the deck?", "max_tokens": max_tokens}  # fmt: skip
    return json.dumps(request).encode()


async def asker(nc: NatsClient, published: Published, stop: asyncio.Event) -> Asked:
    out = Asked()
    while not stop.is_set():
        ready = [conv for conv, ids in published.acked.items() if ids]
        if not ready:
            await asyncio.sleep(0.2)
            continue
        started = time.perf_counter()
        try:
            msg = await nc.request(subjects.CONTEXT_ASSEMBLE, context_request(random.choice(ready)), timeout=5)
            reply = json.loads(msg.data)
            if "error" in reply:
                raise RuntimeError(reply["error"])
            out.latencies_ms.append((time.perf_counter() - started) * 1000)
            out.degraded += bool(reply.get("degraded"))
        except Exception:
            out.failed += 1
        await asyncio.sleep(0.2)
    return out


def cli(data_dir: Path, *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "mnemo.runtime.cli", "cluster", *args, "--data-dir", str(data_dir)],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def pids_of(data_dir: Path) -> list[dict[str, Any]]:
    processes: list[dict[str, Any]] = json.loads((data_dir / "run" / "pids.json").read_text())["processes"]
    return processes


async def kill_and_restart(data_dir: Path, name: str, replica: int | None, down_s: float, log: list[str]) -> None:
    entry = next(p for p in pids_of(data_dir) if p["name"] == name and p.get("replica") == replica)
    label = name if replica is None else f"{name}-{replica}"
    print(f"  kill -9 {label} (pid {entry['pid']}), down {down_s:.0f}s", flush=True)
    os.kill(entry["pid"], signal.SIGKILL)
    await asyncio.sleep(down_s)
    await asyncio.to_thread(cli, data_dir, "restart", name, *([] if replica is None else [str(replica)]))
    log.append(label)


async def v1_router_holder(js: JetStreamContext) -> int | None:
    """The pid of the ingest replica routing v1 events (it holds the ``ingest_v1`` lease), if any."""
    try:
        entry = await (await js.key_value(LEASE_BUCKET)).get(subjects.INGEST_V1_LEASE)
        return int((entry.value or b"").decode().rsplit(":", 1)[1])
    except Exception:
        return None


async def faults(js: JetStreamContext, data_dir: Path, db_down_s: float, rng: random.Random) -> list[str]:
    """Each service's random replica (ingest's: the one routing v1 events, which also holds partitions: the others
    must take both over), then a NATS node, then SecantusDB, one after the other."""
    done: list[str] = []
    await asyncio.sleep(5)
    for service in SERVICES:
        entries = [p for p in pids_of(data_dir) if p["name"] == service.name]
        if not entries:
            continue
        holder = await v1_router_holder(js) if service.name == "ingest" else None
        active = [p["replica"] for p in entries if p["pid"] == holder]
        await kill_and_restart(data_dir, service.name, active[0] if active else rng.choice(entries)["replica"], 3, done)
        await asyncio.sleep(3)
    node = rng.choice([p["name"] for p in pids_of(data_dir) if p["name"].startswith("nats-")])
    await kill_and_restart(data_dir, node, None, 5, done)
    await asyncio.sleep(5)
    await kill_and_restart(data_dir, "secantusd", None, db_down_s, done)
    await asyncio.sleep(5)
    return done


async def backlog(js: JetStreamContext) -> dict[str, int]:
    """Each durable of the chat and log streams with messages pending or unacknowledged, and how many."""
    busy: dict[str, int] = {}
    for stream in (subjects.CHAT_STREAM, subjects.LOG_STREAM):
        for info in await js.consumers_info(stream):
            if lag := (info.num_pending or 0) + (info.num_ack_pending or 0):
                busy[f"{stream}/{info.name}"] = lag
    return busy


async def quiet(js: JetStreamContext, stall_s: float, cap_s: float) -> dict[str, int]:
    """Until every durable of the chat and log streams has acknowledged everything; what each durable still
    had pending and unacknowledged when it gave up (empty once settled), so a run that did not settle says
    which stage fell behind.

    It gives up when the backlog has not shrunk for ``stall_s`` (a stage that is stuck) or after ``cap_s`` in
    all: a slow machine drains slowly, and that is not a fault; a backlog that stops draining is."""
    started = last_progress = last_report = time.monotonic()
    busy: dict[str, int] = {"unknown": 1}
    lowest: int | None = None
    while (now := time.monotonic()) - last_progress < stall_s and now - started < cap_s:
        try:
            busy = await backlog(js)
        except Exception:
            busy = {"unknown": 1}
        if not busy:
            return busy
        total = sum(busy.values())
        if lowest is None or total < lowest:
            lowest, last_progress = total, now
        if now - last_report >= 30:
            print(f"  still draining after {now - started:.0f} s: {total} messages in {len(busy)} durables", flush=True)
            last_report = now
        await asyncio.sleep(1)
    return busy


def _shard_homes(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "services").glob("context-assembler-*"))


async def shards_caught_up(js: JetStreamContext, data_dir: Path, timeout_s: float) -> bool:
    """Until every context-assembler replica's shard has applied the whole points stream (its ``applied.json``)."""
    last = (await js.stream_info(subjects.POINTS_STREAM)).state.last_seq
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        applied = []
        for home in _shard_homes(data_dir):
            state = home / REPLICA_DIR / STATE_FILE
            applied.append(json.loads(state.read_text()).get("applied", 0) if state.exists() else 0)
        if applied and min(applied) >= last:
            return True
        await asyncio.sleep(0.5)
    return False


async def shard_counts(data_dir: Path) -> dict[str, int]:
    """The message points of the chaos tenant in each replica's shard (read after the cluster stopped)."""
    out: dict[str, int] = {}
    for home in _shard_homes(data_dir):
        index = EdgeVectorIndex(home / REPLICA_DIR, Settings().vector_collection)
        await index.ensure_collection(DIMENSIONS)
        try:
            out[home.name] = await index.count(VectorFilter.where(**{vp.TENANT_ID: TENANT, vp.KIND: vp.MESSAGE}))
        finally:
            await index.close()
    return out


async def ready(data_dir: Path, timeout_s: float) -> bool:
    """Every context-assembler replica answers ``/readyz`` (MongoDB and NATS reachable again), within
    ``timeout_s``. The final contexts are asked after it: the faults end with SecantusDB restarted, and a
    context asked while a replica's driver is still finding the database again is degraded by design (its
    reads time out), which says nothing about whether the stack recovered."""
    urls = [f"{p['http']}/readyz" for p in pids_of(data_dir) if p["name"] == "context-assembler" and p.get("http")]

    def all_ready() -> bool:
        for url in urls:
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status != 200:
                        return False
            except OSError:  # refused, timed out or 503 (HTTPError is an OSError): not ready yet
                return False
        return True

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if await asyncio.to_thread(all_ready):
            return True
        await asyncio.sleep(1)
    return False


FINAL_ASKS = 3
FINAL_ASK_PAUSE_S = 2.0


@dataclass
class FinalContexts:
    """Each conversation's degraded parts on its last ask, and which were degraded on the first."""

    degraded: dict[str, list[str]] = field(default_factory=dict)
    degraded_first: set[str] = field(default_factory=set)


async def final_context(nc: NatsClient, conv: str) -> list[str]:
    # A large budget: at the contract's default of 1,500 tokens a fact related to the question may not fit, and
    # the reply names it in ``degraded`` (``knowledge:<id>``): a budget note, not a part that failed.
    msg = await nc.request(subjects.CONTEXT_ASSEMBLE, context_request(conv, 8000), timeout=30)
    reply = json.loads(msg.data)
    return list(reply.get("degraded", [])) if "error" not in reply else [f"error: {reply['error']}"]


async def final_contexts(nc: NatsClient, conversations: list[str]) -> FinalContexts:
    """Each conversation's context once everything is processed, asked again (up to ``FINAL_ASKS`` times,
    ``FINAL_ASK_PAUSE_S`` apart) while degraded, as a client would. On 2 shared cores at load 10-20 (nine
    processes and their servers) one ask's reads can all pass their 2 s deadline (``context part history
    unavailable: TimeoutError``, 2026-11-27 23:02 UTC): that is load, not a stack that failed to recover. A part
    that the faults really broke (a shard behind, a store that lost data) is degraded on every ask."""
    out = FinalContexts()
    for conv in conversations:
        for ask in range(FINAL_ASKS):
            if ask:
                await asyncio.sleep(FINAL_ASK_PAUSE_S)
            out.degraded[conv] = await final_context(nc, conv)
            if not out.degraded[conv]:
                break
            if ask == 0:
                out.degraded_first.add(conv)
    return out


async def main(replicas: str, conversations: int, rate: float, db_down_s: float, keep: Path | None) -> dict[str, Any]:
    convs = [f"c{i:02d}" for i in range(conversations)]
    rng = random.Random(7)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mnemo-chaos-") as scratch:
        base = keep or Path(scratch)
        async with cluster(base, replicas, "chaos", ENV) as (_nats_url, mongodb_url, pids):
            data_dir = Path(pids["processes"][0]["log"]).parent.parent
            urls = [p["url"] for p in pids["processes"] if p["name"].startswith("nats-")]
            nc = await nats.connect(urls, max_reconnect_attempts=-1, reconnect_time_wait=0.5, name="chaos-platform")
            try:
                js = nc.jetstream(timeout=10)
                stop = asyncio.Event()
                published = Published({conv: [] for conv in convs})
                publishing = asyncio.create_task(publisher(js, convs, rate, stop, published))
                asking = asyncio.create_task(asker(nc, published, stop))
                fault_log = await faults(js, data_dir, db_down_s, rng)
                stop.set()
                await publishing
                asked = await asking
                print("  faults done; waiting until every durable has acknowledged everything...", flush=True)
                unsettled = await quiet(js, stall_s=180, cap_s=3600)
                async with event_log(mongodb_url, data_dir) as store:
                    stored = await recorded(store, TENANT, USER, convs)
                    facts = await fact_counts(store, TENANT, BOT)
                counts = compare(published.acked, stored)
                if counts["out_of_order"]:  # which messages, so the kept logs (--keep) can be searched for them
                    print(f"  out of order: {json.dumps(displaced(published.acked, stored))}", flush=True)
                dupes = await duplicate_summaries(mongodb_url, TENANT)
                dlq = (await js.stream_info(subjects.DLQ_STREAM)).state.messages
                followed = await shards_caught_up(js, data_dir, 120)
                await ready(data_dir, 120)  # asked once the replicas reach the database again
                degraded = await final_contexts(nc, convs)
                async with event_log(mongodb_url, data_dir) as store:  # the latest point the relays had to publish
                    never_relayed = await unrelayed(store)
                if never_relayed:
                    print(
                        "  in the log, never published (no receipt):\n    " + "\n    ".join(never_relayed), flush=True
                    )
            finally:
                await nc.close()
        shards = await shard_counts(data_dir)  # the cluster is stopped: the shards are free to open
    latencies = sorted(asked.latencies_ms)
    return {
        **counts,
        "answered_share": round(len(latencies) / asked.total, 3) if asked.total else 0.0,
        "p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))]) if latencies else None,
        "context_requests": asked.total,
        "degraded_during": asked.degraded,
        "degraded_final": sum(bool(d) for d in degraded.degraded.values()),
        "degraded_final_first_ask": len(degraded.degraded_first),
        "degraded_parts": sorted({part for d in degraded.degraded.values() for part in d}),
        "points_per_shard": shards,
        "shards_caught_up": followed,
        "missing_points": sum(max(0, sum(len(set(v)) for v in stored.values()) - n) for n in shards.values()),
        "unrelayed": len(never_relayed),
        "duplicate_summaries": dupes,
        **facts,
        "dead_letters": dlq,
        "published": sum(len(v) for v in published.acked.values()),
        "publish_retries": published.retries,
        "conversations": conversations,
        "faults": fault_log,
        "settled": not unsettled,
        "unsettled": unsettled,
        "replicas": replicas,
        "seconds": round(time.monotonic() - started),
        **machine(),
    }


def ok(result: dict[str, Any]) -> bool:
    return bool(
        result["lost"] == result["duplicated"] == result["out_of_order"] == 0
        and result["dead_letters"] == 0
        and result["duplicate_summaries"] == 0
        and result["duplicate_facts"] == 0
        and result["answered_share"] >= 0.95
        and result["degraded_final"] == 0
        and result["settled"]
        and result["shards_caught_up"]
        and result["missing_points"] == 0
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", help="as `mnemo cluster --replicas` (default: the default topology)")
    parser.add_argument("--conversations", type=int, default=8)
    parser.add_argument("--rate", type=float, help="messages per second, all conversations together (10; quick: 4)")
    parser.add_argument("--db-down", type=float, default=10.0, help="seconds SecantusDB stays down")
    parser.add_argument("--quick", action="store_true", help="the CI size: fewer replicas and conversations")
    parser.add_argument("--keep", type=Path, help="keep the cluster's data and logs under this directory")
    args = parser.parse_args()
    # The default topology, with 3 ingest replicas sharing the partitions (issue 25).
    default = ",".join(f"{s.name}={3 if s.name == 'ingest' else s.replicas}" for s in SERVICES)
    replicas = args.replicas or (QUICK_REPLICAS if args.quick else default)
    conversations = 4 if args.quick else args.conversations
    rate = args.rate or (4.0 if args.quick else 10.0)
    outcome = asyncio.run(main(replicas, conversations, rate, args.db_down, args.keep))
    print_result(outcome)
    sys.exit(0 if ok(outcome) else 1)
