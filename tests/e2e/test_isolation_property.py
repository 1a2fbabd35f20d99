"""Tenant and user isolation as a security property, through the public contract only.

Many random (tenant, user) pairs, some sharing a tenant, all reusing the SAME conversation and message ids,
each with its own secret words. Every pair then asks about every other pair's secret: no reply may contain
a word, a message or a source of anyone else. Randomised with a fixed seed so a failure reproduces.
"""

from __future__ import annotations

import asyncio
import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import nats
import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CREATED = "mnemo.chat.message.created.v1"
ASSEMBLE = "mnemo.rpc.context.assemble.v1"
WORDS = ["amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "jasper",
         "kelp", "lagoon", "marble", "nectar", "onyx", "pebble", "quartz", "raven", "saffron", "tundra"]  # fmt: skip


def scenario(seed: int) -> dict[tuple[str, str], str]:
    """(tenant, user) -> that pair's secret; tenants and users drawn so that ids collide across pairs."""
    rng = random.Random(seed)
    pairs: dict[tuple[str, str], str] = {}
    while len(pairs) < 12:
        tenant = f"tenant-{rng.randint(0, 4)}"
        user = f"user-{rng.randint(0, 3)}"
        if (tenant, user) not in pairs:
            secret = f"{rng.choice(WORDS)}{rng.randint(1000, 9999)}"
            pairs[(tenant, user)] = secret
    return pairs


def messages(tenant: str, user: str, secret: str) -> list[dict[str, Any]]:
    start = datetime(2026, 9, 1, tzinfo=UTC)
    texts = [
        f"The password to the vault is {secret}, remember it.",
        "Let's talk about the weather for a while.",
        "Sure, it has been raining all week.",
        f"Again: the vault password is {secret}.",
    ]
    return [
        {
            "tenant_id": tenant,
            "user_id": user,
            "conversation_id": "shared-conv",
            "message_id": f"m-{i}",
            "role": "user" if i % 2 == 0 else "assistant",
            "author_id": "persona" if i % 2 == 0 else "bot",
            "author_name": "P" if i % 2 == 0 else "B",
            "content": text,
            "created_at": (start + timedelta(minutes=i)).isoformat(),
            "bot_ids": ["bot"],
            "persona_id": "persona",
        }
        for i, text in enumerate(texts)
    ]


async def ask(nc: nats.NATS, tenant: str, user: str, question: str) -> dict[str, Any]:
    body = {
        "tenant_id": tenant,
        "user_id": user,
        "conversation_id": "shared-conv",
        "bot_id": "bot",
        "user_message": question,
        "max_tokens": 2000,
    }
    reply: dict[str, Any] = json.loads((await nc.request(ASSEMBLE, json.dumps(body).encode(), timeout=15)).data)
    return reply


async def test_no_reply_ever_contains_another_tenants_or_users_data(stack: Any) -> None:
    pairs = scenario(seed=20261122)
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        js = nc.jetstream()
        for (tenant, user), secret in pairs.items():
            for msg in messages(tenant, user, secret):
                await js.publish(CREATED, json.dumps(msg).encode())

        # Wait until every pair sees its own secret, retrieved and in history (ingest and embedding done).
        deadline = asyncio.get_running_loop().time() + 120
        for (tenant, user), secret in pairs.items():
            while True:
                own = await ask(nc, tenant, user, f"What is the vault password {secret}?")
                if own["context"].count(secret) >= 2 or asyncio.get_running_loop().time() > deadline:
                    break
                await asyncio.sleep(0.5)
            assert secret in own["context"], (tenant, user, own)

        for (tenant, user), secret in pairs.items():
            for (other_tenant, other_user), other_secret in pairs.items():
                if (other_tenant, other_user) == (tenant, user):
                    continue
                reply = await ask(nc, tenant, user, f"Tell me about the vault password {other_secret}")
                assert "error" not in reply, reply
                assert other_secret not in reply["context"], (tenant, user, other_tenant, other_user)
                assert secret in reply["context"], "own history still served"
    finally:
        await nc.drain()
