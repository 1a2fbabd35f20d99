"""Lore activation on a chat (pure): the placed entries, why each fired, and the timed state after the scan.

The engine (``activation/``) runs SillyTavern's World Info rules; this adapts the assembler's history,
request and vector hits to it (:func:`activate_lore_state`) and its timed records to the books' versions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from mnemo.services.context_assembler.items import BotProfile, ChatLine, LoreItem, PersonaProfile
from mnemo.services.context_assembler.lore.engine.activation import ActivatedEntry, ScanMessage, ScanRequest, activate
from mnemo.services.context_assembler.lore.engine.compiled import ActiveBook, CompiledLore
from mnemo.services.context_assembler.lore.engine.timed import TimedState


def unversioned(state: TimedState) -> TimedState:
    """Timed records keyed ``<book>.<uid>``: the engine's idents carry the book version the loader compiled
    (``<book>@<version>.<uid>``), and an edit of the book must not orphan its running effects."""

    def strip(ident: str) -> str:
        book, uid = ident.rsplit(".", 1)
        return f"{book.split('@', 1)[0]}.{uid}"

    return _rekey(strip)(state)


def versioned(state: TimedState, books: Sequence[ActiveBook]) -> TimedState:
    """The stored records keyed by the idents of the books as compiled now (inverse of :func:`unversioned`)."""
    current = {b.book_id.split("@", 1)[0]: b.book_id for b in books}

    def add(ident: str) -> str:
        book, uid = ident.rsplit(".", 1)
        return f"{current.get(book, book)}.{uid}"

    return _rekey(add)(state)


def _rekey(key: Callable[[str], str]) -> Callable[[TimedState], TimedState]:
    def apply(state: TimedState) -> TimedState:
        return TimedState(
            sticky={key(k): v for k, v in state.sticky.items()},
            cooldown={key(k): v for k, v in state.cooldown.items()},
        )

    return apply


def scan_texts(bot: BotProfile | None, persona: PersonaProfile | None) -> dict[str, str]:
    """The extra texts entries may opt into: the persona's description and the character's description (the
    bot's instructions)."""
    texts: dict[str, str] = {}
    if persona is not None and persona.description.strip():
        texts["persona_description"] = persona.description
    if bot is not None and bot.system_prompt.strip():
        texts["character_description"] = bot.system_prompt
    return texts


@dataclass(frozen=True)
class LoreActivation:
    items: list[LoreItem]
    timed: TimedState  # the conversation's timed effects after this scan, to persist


def activate_lore_state(
    lore: CompiledLore,
    history: Sequence[ChatLine],
    user_message: str,
    *,
    max_tokens: int,
    seed: str,
    user_name: str = "User",
    character: str | None = None,
    similar: Mapping[str, float] | None = None,
    timed: TimedState | None = None,
    message_count: int | None = None,
    scan_data: Mapping[str, str] | None = None,
    deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> LoreActivation:
    """The placed activated entries, in insertion order, and the timed state after the scan (pure).

    SillyTavern's global defaults (scan depth 2, 25% of the context as the World Info budget, ...) over the
    history window, oldest first, with ``user_message`` as the newest message. The probability ``seed`` is
    the conversation and turn (see ``lore.LoreLoader.activate``), so a repeated request activates the same entries.
    Entries that opt into the persona's description or the character's description (``matchPersona
    Description``, ``matchCharacterDescription``) scan the active persona's description and the bot's
    instructions; mnemo models no separate personality, scenario, depth prompt or creator notes, so those
    flags scan nothing. Timed effects (sticky, cooldown, delay) use the conversation's stored state and
    length (``timed.py``).

    ``similar``: entries forced by vector similarity (see ``lore.LoreLoader.similar``), engine ident -> cosine.
    ``timed`` and ``message_count``: the conversation's stored timed effects and its length (the history is
    only a window of it). ``scan_data``: the extra texts entries may opt into (``persona_description``,
    ``character_description``; see ``mnemo.services.context_assembler.lore.engine.compiled.EXTRA_FLAGS``).
    ``deadline``: ``clock()`` past which the scan raises ``ScanBudgetExceeded`` (``ScanRequest.clock``).
    """
    similar = similar or {}
    messages = [ScanMessage(h.author_name or h.role, h.content) for h in history]
    if user_message.strip():
        messages.append(ScanMessage(user_name, user_message))
    scan = ScanRequest(
        messages=messages,
        max_context=max_tokens,
        seed=seed,
        character=character,
        forced=frozenset(similar),
        timed=timed or TimedState(),
        message_count=message_count,
        scan_data=dict(scan_data or {}),
        deadline=deadline,
        clock=clock,
    )
    result = activate(lore, scan)
    return LoreActivation([_item(e, similar) for e in result.entries if e.placed], result.timed)


def _item(e: ActivatedEntry, similar: Mapping[str, float]) -> LoreItem:
    book_id = e.book_id.split("@", 1)[0]  # compiled under "<book>@<version>", see lore.LoreLoader.books
    return LoreItem(
        book_id,
        e.entry.uid,
        e.content,
        why_text(e, similar),
        float(e.entry.order),
        e.entry.constant,
        position=e.entry.position,
        depth=e.entry.depth,
        role=e.entry.role,
    )


def why_text(e: ActivatedEntry, similar: Mapping[str, float] | None = None) -> str:
    """``key: <key>`` (plus the secondary keys that matched), ``similarity: 0.71`` for a vector hit, or the
    reason (``constant``, ``sticky``, ...)."""
    why = e.why
    if why.kind == "vector" and similar and e.ident in similar:
        return f"similarity: {similar[e.ident]:.2f}"
    if why.kind == "key":
        secondary = f" (secondary: {', '.join(why.secondary)})" if why.secondary else ""
        return f"key: {why.key}{secondary}"
    return why.kind
