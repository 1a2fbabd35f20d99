"""Swipes and forks end to end, over NATS only, on one embedded stack (``tests/e2e/conftest.py``).

- Swipe: a bot reply tells a secret, then an alternative (``swipe_of``) tells another; only the current one is
  anywhere in the context (history, retrieved, memories, knowledge) and in the memory list, and selecting the
  original back (``mnemo.chat.message.swipe_selected.v1``) turns it round again: what the old one produced is
  retired and the new one's derived.
- Fork: ``mnemo.chat.conversation.forked.v1`` from message 9 of a conversation; then the parent and the fork
  each go on with a secret of their own. The fork's context holds the parent's history up to message 9 and
  the fork's own secret, never the parent's later one; the parent never shows the fork's.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import nats
import pytest

from tests.e2e.scenes import turn
from tests.e2e.subjects import ASSEMBLE, CREATED, FORKED, MEMORY_LIST, SELECTED
from tests.waiting import wait_for_stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

T0 = datetime(2026, 10, 1, 20, 0, tzinfo=UTC)
TENANT, USER, BOT, LISTENER = "t-branch", "u-1", "rowan", "wren"  # the listener learns what rowan says
LINES = [
    "We followed the river north until the old mill.",
    "The miller says the wheel has not turned in years.",
    "I asked him about the tower on the hill.",
    "Listen closely. The secret is that the crown lies under the obsidian stone.",
    "Then we should climb the hill before dark.",
    "The path is muddy but the lanterns are lit.",
    "A fox watched us from the hedge.",
    "The tower door is locked with three bolts.",
    "I found a rusty key near the well.",
    "The key turns the first bolt with a groan.",
]


def message(conv: str, i: int, content: str, **extra: Any) -> dict[str, Any]:
    body = turn(
        i, content, T0 + timedelta(minutes=i), tenant=TENANT, user=USER, conv=conv, message_id=f"{conv}-m{i}",
        persona=("p-1", "Ilya"), bot=(BOT, "Rowan"),
    )  # fmt: skip
    return {**body, "bot_ids": [BOT, LISTENER], **extra}


async def ask(nc: nats.NATS, conv: str, question: str) -> dict[str, Any]:
    body = {"tenant_id": TENANT, "user_id": USER, "conversation_id": conv, "bot_id": LISTENER, "persona_id": "p-1",
            "user_message": question, "max_tokens": 60000}  # fmt: skip
    reply: dict[str, Any] = json.loads((await nc.request(ASSEMBLE, json.dumps(body).encode(), timeout=30)).data)
    assert "error" not in reply, reply
    return reply


async def memory_texts(nc: nats.NATS) -> list[str]:
    body = {"tenant_id": TENANT, "user_id": USER, "source": "all", "limit": 200}
    reply = json.loads((await nc.request(MEMORY_LIST, json.dumps(body).encode(), timeout=30)).data)
    assert "error" not in reply, reply
    return [str(item["text"]).lower() for item in reply["items"] if item.get("status") in (None, "active")]


async def publish(nc: nats.NATS, subject: str, *bodies: dict[str, Any]) -> None:
    js = nc.jetstream()
    for body in bodies:
        await js.publish(subject, json.dumps(body).encode())


async def shows(nc: nats.NATS, conv: str, present: str, absent: str, question: str) -> bool:
    """The context holds ``present`` (a fact too) and nothing anywhere of ``absent``."""
    reply = await ask(nc, conv, question)
    context = reply["context"].lower()
    knowledge = " ".join(s["text"] for s in reply["sections"] if s["name"] == "knowledge").lower()
    return present in context and present in knowledge and absent not in context


async def test_only_the_current_swipe_is_remembered(stack: Any) -> None:
    conv = "swipe-c"
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        await publish(nc, CREATED, *(message(conv, i, line) for i, line in enumerate(LINES)))
        question = "Where does the crown lie?"
        await wait_for_stack(
            lambda: shows(nc, conv, "obsidian", "basalt", question), "the original reply remembered, as a fact too"
        )
        swipe = message(conv, 3, LINES[3].replace("obsidian", "basalt"), message_id=f"{conv}-s3")
        await publish(nc, CREATED, {**swipe, "swipe_of": f"{conv}-m3"})

        async def swiped() -> bool:
            texts = " ".join(await memory_texts(nc))
            return await shows(nc, conv, "basalt", "obsidian", question) and "obsidian" not in texts

        await wait_for_stack(swiped, "the swipe alone remembered: history, summaries and facts")
        reply = await ask(nc, conv, "")
        history = next(s["text"] for s in reply["sections"] if s["name"] == "history")
        assert history.count("crown lies under") == 1, "one alternative in the history"

        selected = {"tenant_id": TENANT, "user_id": USER, "conversation_id": conv, "message_id": f"{conv}-m3",
                    "selected_at": (T0 + timedelta(hours=1)).isoformat()}  # fmt: skip
        await publish(nc, SELECTED, selected)

        async def back() -> bool:
            texts = " ".join(await memory_texts(nc))
            return await shows(nc, conv, "obsidian", "basalt", question) and "basalt" not in texts

        await wait_for_stack(back, "the original alone remembered again")
    finally:
        await nc.drain()


FILLER = [
    "The wind rattled the shutters of the inn.",
    "We counted the coins twice before paying.",
    "A cart rolled past carrying barrels of cider.",
    "The innkeeper lit another candle for us.",
    "Rain started to fall on the cobblestones.",
]


def go_on(conv: str, start: int, count: int, secret_at: int, secret: str) -> list[dict[str, Any]]:
    """Messages ``start`` .. ``start + count - 1``; the one at ``secret_at`` (a bot turn) tells ``secret``."""
    lines = []
    for i in range(start, start + count):
        text = (
            f"Listen closely. The secret is that the map lies under the {secret} stone."
            if i == secret_at
            else FILLER[i % 5]
        )
        lines.append(message(conv, i, text))
    return lines


async def test_a_fork_and_its_parent_never_share_what_came_after(stack: Any) -> None:
    parent, fork = "fork-p", "fork-f"
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        await publish(nc, CREATED, *(message(parent, i, line) for i, line in enumerate(LINES)))
        await wait_for_stack(lambda: shows(nc, parent, "obsidian", "cedar", "Where does the crown lie?"), "the parent")
        forked = {"tenant_id": TENANT, "user_id": USER, "conversation_id": fork, "parent_conversation_id": parent,
                  "from_message_id": f"{parent}-m5", "forked_at": (T0 + timedelta(hours=1)).isoformat()}  # fmt: skip
        await publish(nc, FORKED, forked)
        await publish(nc, CREATED, *go_on(parent, 10, 22, 13, "cedar"))
        await publish(nc, CREATED, *go_on(fork, 6, 22, 9, "willow"))

        question = "Where does the map lie?"
        await wait_for_stack(lambda: shows(nc, parent, "cedar", "willow", question), "the parent's own secret, only")
        await wait_for_stack(lambda: shows(nc, fork, "willow", "cedar", question), "the fork's own secret, only")
        # What the fork kept of the parent: the crown's secret (message 3), learned again in the fork.
        assert await shows(nc, fork, "obsidian", "cedar", "Where does the crown lie?")

        async def summarized() -> bool:
            body = {"tenant_id": TENANT, "user_id": USER, "source": "memory", "limit": 200}
            reply = json.loads((await nc.request(MEMORY_LIST, json.dumps(body).encode(), timeout=30)).data)
            ranges = {(i["conversation_id"], i["end_at"]) for i in reply["items"] if i.get("status") == "active"}
            return sum(c == fork for c, _ in ranges) >= 2 and sum(c == parent for c, _ in ranges) >= 2

        await wait_for_stack(summarized, "summaries of both branches past the fork point")
        for asked in (question, "cedar stone", "willow stone", ""):
            fork_context = (await ask(nc, fork, asked))["context"].lower()
            parent_context = (await ask(nc, parent, asked))["context"].lower()
            assert "cedar" not in fork_context, asked
            assert "willow" not in parent_context, asked
            assert FILLER[4].lower() in fork_context, "the fork's own history is there"
    finally:
        await nc.drain()
