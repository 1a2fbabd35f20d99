"""``message.created`` bodies as a platform sends them, for the end-to-end tests: two-party scenes in which a
player (through a persona) and a bot take turns."""

from __future__ import annotations

from datetime import datetime
from typing import Any


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
