"""Plays the demo scene through the public contract only (plain nats-py, JSON payloads), as a platform
would, then asks for the context of a sample request and returns the reply.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any

import nats

from mnemo.shared import subjects


def load_scene() -> dict[str, Any]:
    scene: dict[str, Any] = json.loads(resources.files("mnemo.runtime.demo").joinpath("scene.json").read_text())
    return scene


def scene_events(scene: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(subject, payload) pairs in the order a platform would publish them."""
    tenant, user, conv = scene["tenant_id"], scene["user_id"], scene["conversation_id"]
    start = datetime(2026, 11, 1, 18, 0, tzinfo=UTC)
    names = {b["bot_id"]: b["name"] for b in scene["bots"]}
    persona = scene["persona"]
    events: list[tuple[str, dict[str, Any]]] = []
    for bot in scene["bots"]:
        events.append((subjects.BOT_UPSERTED, {"tenant_id": tenant, "updated_at": start.isoformat(), **bot}))
    events.append(
        (
            subjects.PERSONA_UPSERTED,
            {"tenant_id": tenant, "user_id": user, "updated_at": start.isoformat(), **persona},
        )
    )
    for i, m in enumerate(scene["messages"]):
        is_user = m["role"] == "user"
        events.append(
            (
                subjects.MESSAGE_CREATED,
                {
                    "tenant_id": tenant,
                    "user_id": user,
                    "conversation_id": conv,
                    "message_id": f"{conv}-m{i:03d}",
                    "role": m["role"],
                    "author_id": persona["persona_id"] if is_user else m["author"],
                    "author_name": persona["name"] if is_user else names[m["author"]],
                    "content": m["content"],
                    "created_at": (start + timedelta(minutes=2 * i)).isoformat(),
                    "bot_ids": list(names),
                    "persona_id": persona["persona_id"],
                },
            )
        )
    return events


def lore_import(scene: dict[str, Any]) -> bytes:
    """The `mnemo.rpc.lore.import.v1` request for the scene's lorebook (SillyTavern World Info JSON)."""
    book = scene["lorebook"]
    return json.dumps(
        {
            "tenant_id": scene["tenant_id"],
            "owner_user_id": scene["user_id"],
            "name": book["name"],
            "data": {"entries": book["entries"]},
            "attach_to_bots": [b["bot_id"] for b in scene["bots"]],
        }
    ).encode()


def sample_request(scene: dict[str, Any]) -> dict[str, Any]:
    return {
        "tenant_id": scene["tenant_id"],
        "user_id": scene["user_id"],
        "conversation_id": scene["conversation_id"],
        "persona_id": scene["persona"]["persona_id"],
        **scene["request"],
    }


async def play(nats_url: str, timeout_s: float = 60.0, connect: dict[str, Any] | None = None) -> dict[str, Any]:
    """Publish the scene, then poll the context until the last message and a retrieved one show up;
    ``connect``: the platform's credentials and TLS (``mnemo.shared.natsconn.connect_options``)."""
    scene = load_scene()
    nc = await nats.connect(nats_url, **(connect or {}))
    try:
        js = nc.jetstream()
        events = scene_events(scene)
        for subject, payload in events:
            msg_id = payload.get("message_id") or f"{subject}:{payload.get('bot_id') or payload.get('persona_id')}"
            await js.publish(subject, json.dumps(payload).encode(), headers={"Nats-Msg-Id": msg_id})
        if "lorebook" in scene:  # the scene's own World Info book, attached to its bots
            imported = json.loads((await nc.request(subjects.LORE_IMPORT, lore_import(scene), timeout=30)).data)
            if "error" in imported:
                raise RuntimeError(f"demo lorebook rejected: {imported['error']}")
        last_content = scene["messages"][-1]["content"]
        request = json.dumps(sample_request(scene)).encode()
        deadline = asyncio.get_running_loop().time() + timeout_s
        reply: dict[str, Any] = {}
        while asyncio.get_running_loop().time() < deadline:
            reply = json.loads((await nc.request(subjects.CONTEXT_ASSEMBLE, request, timeout=10)).data)
            context = reply.get("context", "")
            retrieved = any(s["kind"] == "message" and s.get("score") for s in reply.get("sources", []))
            # Ready once ingest has the whole scene and either retrieval found an earlier message or the
            # history window already holds all of it (then nothing is left to retrieve).
            whole_scene = all(m["content"] in context for m in scene["messages"])
            if last_content in context and (retrieved or whole_scene):
                break
            await asyncio.sleep(0.5)
        return reply
    finally:
        await nc.drain()
