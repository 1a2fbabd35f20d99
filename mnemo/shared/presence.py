"""Who may know what: the presence rule behind per-character knowledge (the cure for the "hive mind").

A message is witnessed by the bots in its ``bot_ids`` (the characters in the scene when it was said). A bot
may be shown a message, or anything derived from it, only if it witnessed it. A message whose ``bot_ids`` is
empty carries no presence information (the platform does not model scenes), so every bot of the conversation
may see it; platforms that want per-character knowledge send ``bot_ids`` on every message.

Vector points and summaries store the same rule as an ``audience`` list: the bot ids, or :data:`EVERYONE`
when there are none, so one filter (``audience`` contains the bot or ``*``) applies the rule inside the
vector query.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.shared.events.recorded import EVERYONE

__all__ = ["EVERYONE", "bot_may_see", "message_audience", "visible_audience"]


def message_audience(bot_ids: Sequence[str]) -> list[str]:
    """The ``audience`` of a message: its bots, or ``["*"]`` when it names none."""
    return list(dict.fromkeys(bot_ids)) or [EVERYONE]


def bot_may_see(bot_id: str, audience: Sequence[str]) -> bool:
    """Whether ``bot_id`` may be shown an item with this ``audience`` (a message's ``bot_ids`` or a summary's
    ``audience``; empty means no presence information, like ``*``)."""
    return not audience or EVERYONE in audience or bot_id in audience


def visible_audience(bot_id: str) -> tuple[str, str]:
    """The ``audience`` values an item shown to ``bot_id`` may carry (for a vector ``Match``)."""
    return (bot_id, EVERYONE)
