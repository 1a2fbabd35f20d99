"""The scene the pure assembly tests share: captain Mirelle's airship with Tobin the stowaway, and builders of
its lines and lore entries that name only what a test varies (the item classes' other fields keep their
defaults), so each test file states its case rather than a copy of the same setup."""

from __future__ import annotations

from mnemo.services.context_assembler.items import BotProfile, ChatLine, LoreItem, PersonaProfile

BOT = BotProfile("bot-1", "Mirelle", "You are a weary airship captain.")
PERSONA = PersonaProfile("p-1", "Tobin", "A stowaway.")
SENTENCE = "the storm wall over the northern sea grows darker by the hour"


def user_line(
    ident: str, index: int, text: str, persona: str | None = "p-tobin", name: str = "Tobin", score: float | None = None
) -> ChatLine:
    """A user's message, written as ``persona`` (none: the user's own name, no persona label)."""
    return ChatLine(ident, index, "user", name, text, score, persona_id=persona, persona_name=name if persona else "")


def bot_line(ident: str, index: int, text: str, author: str | None = None, name: str = "Mirelle") -> ChatLine:
    """A bot's message; ``author`` another bot of the scene (none: the bot the context is for)."""
    return ChatLine(ident, index, "assistant", name, text, author_id=author)


def lore_entry(
    uid: int,
    text: str,
    *,
    position: int = 2,
    depth: int = 4,
    role: int = 0,
    constant: bool = False,
    order: float = 100,
    book: str = "book",
    detail: str = "key: x",
) -> LoreItem:
    """An entry of ``book`` placed at ``position`` (SillyTavern's numbering; 2, Author's Note top, the lore
    section), ``depth`` and ``role`` for an at-depth entry."""
    return LoreItem(book, uid, text, detail, order, constant, position=position, depth=depth, role=role)
