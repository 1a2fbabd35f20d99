"""The scene of ``make bench-context``: its ids, and the setup that fills a fresh stack with it.

:func:`prepare` publishes the bot, the persona, the lorebook and two REALTALK chats through the public contract,
waits until every consumer is idle, then bulk-loads the rest of the points (``bench/context_load.py``). With
``--state DIR`` the stack's data (nats-server, SecantusDB, the Qdrant Edge shard, the key) stays in ``DIR``
and ``DIR/scene.json`` records the tenant and the setup's figures: a later run given the same ``DIR`` skips
the setup (most of a run's time: the summarizer folds the 3,059 turns slowly) and measures the same scene,
which is how to compare two versions of the code quickly. Its figures carry ``"reused_state": true``: the
timed lore effects recorded by the earlier runs' requests are part of what it measures.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from bench.context_data import lorebook_parts
from bench.context_load import BulkLayout, bulk_load
from bench.retrieval import Chat, slug, wait_quiet
from mnemo.shared import subjects
from mnemo.shared.bootstrap import Core
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.vectors.port import VectorFilter

STATE_FILE = "scene.json"


class Scene:
    """Ids of the measured user, bots and conversations (one user, one bot per published chat)."""

    def __init__(self, tenant: str, measured: Chat, second: Chat) -> None:
        self.tenant = tenant
        self.user_id = f"user-{slug(measured.user_name)}"
        self.persona_id = f"persona-{slug(measured.user_name)}"
        self.user_name = measured.user_name
        self.chats = [measured, second]
        self.bot_id = measured.bot_id
        self.conversation_id = f"conv-{measured.key}"

    def conversation_of(self, chat: Chat) -> str:
        return f"conv-{chat.key}"

    def request(self, message: str) -> dict[str, Any]:
        return {
            "tenant_id": self.tenant,
            "user_id": self.user_id,
            "conversation_id": self.conversation_id,
            "bot_id": self.bot_id,
            "user_message": message,
        }


async def rpc(nc: NatsClient, subject: str, payload: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
    msg = await nc.request(subject, json.dumps(payload).encode(), timeout=timeout)
    reply: dict[str, Any] = json.loads(msg.data)
    if "error" in reply:
        raise RuntimeError(f"{subject} failed: {reply['error']}")
    return reply


async def publish_scene(
    nc: NatsClient,
    js: JetStreamContext,
    scene: Scene,
    lorebook: dict[str, Any],
    lore_parts: int,
    turns: int | None = None,
) -> int:
    """Profiles, the lorebook, then both chats' turns (the first ``turns`` of each, or all); returns the number
    of turns published."""
    stamp = "2020-01-01T00:00:00Z"
    for chat in scene.chats:
        bot = {
            "tenant_id": scene.tenant,
            "bot_id": chat.bot_id,
            "name": chat.bot_name,
            "system_prompt": f"You are {chat.bot_name}, chatting with {chat.user_name}. Stay in character.",
            "updated_at": stamp,
        }
        await js.publish(subjects.BOT_UPSERTED, json.dumps(bot).encode())
    persona = {
        "tenant_id": scene.tenant,
        "user_id": scene.user_id,
        "persona_id": scene.persona_id,
        "name": scene.user_name,
        "description": f"{scene.user_name}, a student who likes travelling and games.",
        "updated_at": stamp,
    }
    await js.publish(subjects.PERSONA_UPSERTED, json.dumps(persona).encode())
    entries = 0
    for i, part in enumerate(lorebook_parts(lorebook, lore_parts), 1):
        imported = await rpc(
            nc,
            subjects.LORE_IMPORT,
            {
                "tenant_id": scene.tenant,
                "owner_user_id": scene.user_id,
                "name": f"Monster Hunter (bench) {i}/{lore_parts}",
                "data": part,
                "attach_to_bots": [scene.bot_id],
            },
        )
        entries += int(imported["entries"])
    print(f"  lorebook imported in {lore_parts} part(s): {entries} entries, attached to {scene.bot_id}", flush=True)
    pending = []
    for chat in scene.chats:
        for t in chat.turns[:turns]:
            is_user = t.role == "user"
            payload = {
                "tenant_id": scene.tenant,
                "user_id": scene.user_id,
                "conversation_id": scene.conversation_of(chat),
                "message_id": t.dia_id,
                "role": t.role,
                "author_id": scene.persona_id if is_user else chat.bot_id,
                "author_name": t.speaker,
                "content": t.text,
                "created_at": t.created_at.isoformat(),
                "bot_ids": [chat.bot_id],
                "persona_id": scene.persona_id,
            }
            pending.append((f"{chat.key}:{t.dia_id}", payload))
    start = time.perf_counter()
    for i in range(0, len(pending), 256):
        chunk = pending[i : i + 256]
        await asyncio.gather(
            *(
                js.publish(subjects.MESSAGE_CREATED, json.dumps(p).encode(), headers={"Nats-Msg-Id": mid})
                for mid, p in chunk
            )
        )
    print(f"  published {len(pending):,} turns ({time.perf_counter() - start:.1f}s)", flush=True)
    return len(pending)


@dataclass(frozen=True)
class Prepared:
    scene: Scene
    timings: dict[str, float]
    published_points: int
    total_points: int
    conversation_points: int
    reused: bool


async def _counts(core: Core, scene: Scene) -> tuple[int, int]:
    assert core.vectors is not None
    total = await core.vectors.count(VectorFilter.where(tenant_id=scene.tenant))
    conv = await core.vectors.count(VectorFilter.where(tenant_id=scene.tenant, conversation_id=scene.conversation_id))
    return total, conv


async def prepare(
    core: Core,
    nc: NatsClient,
    chats: tuple[Chat, Chat],
    book: dict[str, Any],
    pool_texts: list[str],
    args: Any,
    state: Path | None,
) -> Prepared:
    """The scene in the stack: set up now, or found in ``state`` (see the module docstring)."""
    recorded = state / STATE_FILE if state is not None else None
    if recorded is not None and recorded.is_file():
        saved = json.loads(recorded.read_text())
        scene = Scene(saved["tenant"], *chats)
        total, conv = await _counts(core, scene)
        print(f"reusing the scene of {recorded}: tenant {scene.tenant}, {total:,} points", flush=True)
        return Prepared(scene, saved["timings"], saved["published_points"], total, conv, reused=True)
    assert core.vectors is not None
    assert core.embedder is not None
    scene = Scene(f"bench-context-{uuid.uuid4().hex[:8]}", *chats)
    timings: dict[str, float] = {}
    js = nc.jetstream(timeout=30)
    print("publishing the scene through the public contract ...", flush=True)
    start = time.perf_counter()
    turns = await publish_scene(nc, js, scene, book, args.lore_parts, args.turns)
    await wait_quiet(js, turns)
    timings["published_s"] = round(time.perf_counter() - start, 1)
    published_points = await core.vectors.count(VectorFilter.where(tenant_id=scene.tenant))
    print(f"  pipeline quiet after {timings['published_s']}s: {published_points:,} points", flush=True)

    print(f"embedding a pool of {len(pool_texts):,} distinct turns for the bulk load ...", flush=True)
    start = time.perf_counter()
    pool_vectors = np.asarray(await core.embedder.embed(pool_texts), dtype=np.float32)
    timings["pool_embed_s"] = round(time.perf_counter() - start, 1)
    print(f"  {timings['pool_embed_s']}s", flush=True)

    bulk_points = max(0, args.items - published_points)
    print(f"bulk-loading {bulk_points:,} points into the read models and the index ...", flush=True)
    users = [scene.user_id, *(f"bulk-user-{i}" for i in range(1, args.users))]
    bots = [scene.bot_id, *(f"bulk-bot-{i}" for i in range(1, 4))]
    layout = BulkLayout(scene.tenant, users, bots, conversation_size=args.conversation_size)
    start = time.perf_counter()
    conversations = await bulk_load(
        ReadModels(core.db, core.cipher),
        core.vectors,
        core.embedder.model_id,
        layout,
        pool_texts,
        pool_vectors,
        bulk_points,
    )
    timings["bulk_load_s"] = round(time.perf_counter() - start, 1)
    total, conv = await _counts(core, scene)
    print(
        f"  {total:,} points in the index for the tenant ({conversations} bulk conversations);"
        f" {conv:,} in the measured conversation",
        flush=True,
    )
    if recorded is not None:
        saved = {"tenant": scene.tenant, "timings": timings, "published_points": published_points}
        recorded.write_text(json.dumps(saved))
    return Prepared(scene, timings, published_points, total, conv, reused=False)
