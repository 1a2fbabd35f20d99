"""Small builders for lore tests: a book from entry dicts, a scan over plain messages."""

from __future__ import annotations

from typing import Any

from mnemo.services.context_assembler.lore.engine.activation import ActivationResult, ScanMessage, ScanRequest, activate
from mnemo.services.context_assembler.lore.engine.compiled import ActiveBook, compile_lore
from mnemo.services.context_assembler.lore.engine.timed import TimedState
from mnemo.shared.lore.model import Lorebook, LoreEntry, WorldInfoSettings


def book(*entries: dict[str, Any], name: str = "b") -> Lorebook:
    return Lorebook(
        name=name,
        entries=[LoreEntry.model_validate({"uid": i, "content": f"content {i}", **e}) for i, e in enumerate(entries)],
    )


def scan(
    lore_book: Lorebook | list[ActiveBook],
    messages: list[str],
    *,
    settings: dict[str, Any] | None = None,
    max_context: int = 100_000,
    seed: str = "s",
    timed: TimedState | None = None,
    macros: dict[str, str] | None = None,
    **request: Any,
) -> ActivationResult:
    books = lore_book if isinstance(lore_book, list) else [ActiveBook("b", lore_book)]
    compiled = compile_lore(books, WorldInfoSettings(**(settings or {})), macros)
    chat = [ScanMessage("User" if i % 2 == 0 else "Bot", text) for i, text in enumerate(messages)]
    return activate(
        compiled,
        ScanRequest(messages=chat, max_context=max_context, seed=seed, timed=timed or TimedState(), **request),
    )


def uids(result: ActivationResult) -> list[int]:
    """Uids in insertion order."""
    return [e.entry.uid for e in result.entries]


def activated(result: ActivationResult) -> set[int]:
    return {e.entry.uid for e in result.entries}
