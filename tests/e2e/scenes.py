"""``message.created`` bodies as a platform sends them, for the end-to-end tests: two-party scenes in which a
player (through a persona) and a bot take turns."""

from __future__ import annotations

from datetime import datetime
from typing import Any

#: Six turns of a visit to a lighthouse keeper: enough for a summary, a fact or two and a memory to recall.
LIGHTHOUSE = [
    "We reached the lighthouse at dusk and the keeper let us in.",
    "He showed us a chart of the northern reefs, drawn by his mother.",
    "The chart marks a wreck nobody has found in sixty years.",
    "I promised to bring the chart back after we copy it.",
    "The keeper asked us to keep the wreck a secret from the harbour master.",
    "We left before midnight with the copy rolled in oilcloth.",
]


def turn(
    i: int,
    content: str,
    created_at: datetime,
    *,
    tenant: str,
    user: str,
    conv: str,
    message_id: str,
    persona: tuple[str, str],
    bot: tuple[str, str],
) -> dict[str, Any]:
    """Turn ``i`` of a scene: even turns are the persona's (role ``user``), odd turns the bot's (``assistant``);
    ``persona`` and ``bot`` are (id, display name), and the bot is present in every turn."""
    user_turn = i % 2 == 0
    author_id, author_name = persona if user_turn else bot
    return {
        "tenant_id": tenant,
        "user_id": user,
        "conversation_id": conv,
        "message_id": message_id,
        "role": "user" if user_turn else "assistant",
        "author_id": author_id,
        "author_name": author_name,
        "content": content,
        "created_at": created_at.isoformat(),
        "bot_ids": [bot[0]],
        "persona_id": persona[0],
    }
