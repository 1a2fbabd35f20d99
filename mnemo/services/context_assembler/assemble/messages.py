"""The context as chat-completions messages (the reply's ``messages``).

One ``system`` message holding every section but ``history`` (joined by blank lines), then the history as
``user``/``assistant`` messages, with the at-depth lore entries as messages of their own role at their depth.
A user message carries its persona label (``Tobin: ...``); the speaking bot's own messages are sent as
written, another bot's with its name (``Oren: ...``); narrator and system lines become ``system`` messages.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.services.context_assembler.assemble.render import LORE_ROLES, interleave, persona_label, render_line
from mnemo.services.context_assembler.items import ChatLine, LoreItem
from mnemo_client.wire.contract import ChatMessage


def chat_message(line: ChatLine, bot_id: str) -> ChatMessage:
    content = line.content.strip()
    if line.role == "assistant":
        mine = line.author_id in (None, bot_id) or not line.author_name.strip()
        return ChatMessage(role="assistant", content=content if mine else f"{line.author_name.strip()}: {content}")
    if line.role == "user":
        name = persona_label(line) or line.author_name.strip()
        return ChatMessage(role="user", content=f"{name}: {content}" if name else content)
    return ChatMessage(role="system", content=render_line(line) if line.role == "narrator" else content)


def chat_messages(
    system: str, history: Sequence[ChatLine], depth_lore: Sequence[LoreItem], bot_id: str
) -> list[ChatMessage]:
    """``system`` (the other sections' text), then ``history`` (oldest first) with ``depth_lore`` at depth."""
    messages = [ChatMessage(role="system", content=system)]
    for entry in interleave(history, depth_lore):
        if isinstance(entry, LoreItem):
            messages.append(ChatMessage(role=LORE_ROLES.get(entry.role, "system"), content=entry.content))
        else:
            messages.append(chat_message(entry, bot_id))
    return messages
