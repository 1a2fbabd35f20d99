"""How the `mnemo` commands show replies in a terminal (rich tables and panels); ``--json`` prints the reply
itself instead, for scripts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from mnemo.runtime.dlq import DeadLetter


def lore_import(console: Console, reply: dict[str, Any]) -> None:
    table = Table(title="lorebook imported", show_header=False)
    table.add_row("lorebook id", reply["lorebook_id"])
    table.add_row("entries", str(reply["entries"]))
    table.add_row("format", reply.get("format") or "")
    console.print(table)
    warnings = reply.get("warnings") or []
    if warnings:
        w = Table("uid", "field", "what was done", title=f"{len(warnings)} normalisation(s)")
        for item in warnings:
            w.add_row("book" if item.get("uid") is None else str(item["uid"]), item.get("field", ""), item["message"])
        console.print(w)


def lore_books(console: Console, reply: dict[str, Any]) -> None:
    table = Table("lorebook id", "name", "owner", "entries", "format", "attached to", title="lorebooks")
    for book in reply["books"]:
        targets = [
            *book.get("bot_ids", []),
            *(f"{c['user_id']}/{c['conversation_id']}" for c in book.get("conversations", [])),
        ]
        table.add_row(
            book["lorebook_id"], book["name"], book["owner_user_id"], str(book["entries"]), book.get("format") or "",
            ", ".join(targets),
        )  # fmt: skip
    console.print(table)


def memories(console: Console, reply: dict[str, Any]) -> None:
    items = reply["items"]
    end = reply["offset"] + len(items)
    table = Table(
        "source", "id", "type", "text", "participants", "scope / applies to", "when", "status",
        title=f"items {reply['offset'] + 1 if items else 0}-{end} of {reply['total']}",
    )  # fmt: skip
    for item in items:
        scope = item.get("scope") or ", ".join(item.get("applies_to") or [])
        when = (item.get("end_at") or "")[:19]
        status = item.get("status", "") + (" (lore)" if item.get("converted_to_lore") else "")
        participants = ", ".join(
            item.get("participants") or ([item["character_id"]] if item.get("character_id") else [])
        )
        table.add_row(item["source"], item["id"], item["type"], item["text"], participants, scope, when, status)
    console.print(table)


def context(console: Console, reply: dict[str, Any]) -> None:
    degraded = reply.get("degraded") or []
    console.print(
        f"[bold]context[/bold]: {reply['token_count']} tokens, {len(reply['sections'])} sections; degraded: "
        + (f"[red]{', '.join(degraded)}[/red]" if degraded else "none")
    )
    for section in reply["sections"]:
        console.print(Panel(Text(section["text"]), title=f"{section['name']} ({section['tokens']} tokens)"))
    sources = [s for s in reply["sources"] if s["kind"] != "lore"]
    if sources:
        table = Table("kind", "id", "score", "messages", "detail", title="sources")
        for s in sources:
            score = "" if s.get("score") is None else f"{s['score']:.2f}"
            table.add_row(s["kind"], s["id"], score, ", ".join(s.get("message_ids") or []), s.get("detail") or "")
        console.print(table)
    lore = [s for s in reply["sources"] if s["kind"] == "lore"]
    table = Table("entry (book.uid)", "why it fired", title="activated lore")
    for s in lore:
        table.add_row(s["id"], s.get("detail") or "")
    console.print(table if lore else "activated lore: none")
    if degraded:
        console.print(Group(*(f"[red]degraded[/red]: {part}" for part in degraded)))


def dead_letters(console: Console, letters: Sequence[DeadLetter]) -> None:
    table = Table("seq", "time", "service", "original subject", "attempts", "reason", "bytes", title="dead letters")
    for letter in letters:
        when = letter.time.isoformat(timespec="seconds") if letter.time else ""
        table.add_row(
            str(letter.seq), when, letter.service, letter.original_subject, letter.attempts, letter.reason,
            str(len(letter.data)),
        )  # fmt: skip
    console.print(table if letters else "no dead letters")


def redriven(console: Console, outcomes: Sequence[tuple[DeadLetter, str]]) -> None:
    table = Table("dlq seq", "to subject", "outcome", title=f"{len(outcomes)} redriven")
    for letter, outcome in outcomes:
        table.add_row(str(letter.seq), letter.original_subject, outcome)
    console.print(table)
