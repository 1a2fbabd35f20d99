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


def status(console: Console, report: Any) -> None:
    """``mnemo status``: one table, a section each for the processes, the durables, the dead letters and the
    streams (``mnemo.runtime.status.Report``)."""
    table = Table("", "name", "state", "figures", "detail", title=f"mnemo status (NATS {report.nats})")
    for p in report.processes:
        name = p.name if p.replica is None else f"{p.name}-{p.replica}"
        state = {True: "[green]ready[/green]", False: "[red]not ready[/red]", None: "?"}[p.ready]
        if p.alive is False:
            state = "[red]down[/red]"
        table.add_row("process", name, state, f"pid {p.pid}" if p.pid else "", Text(p.detail or p.http or ""))
    table.add_section()
    for d in report.durables:
        where = f"partition {d.partition}, " if d.partition else ""
        figures = f"pending {d.pending:,}, ack pending {d.ack_pending:,}, redelivered {d.redelivered:,}"
        table.add_row("durable", f"{d.durable} ({d.stream})", f"lag {d.lag:,}", figures, f"{where}{d.filter}")
    table.add_section()
    for service, count in sorted(report.dead_letters.items()):
        state = f"[red]{count:,}[/red]" if count else "0"
        table.add_row("dead letters", service, state, "", "mnemo dlq list --service " + service)
    if not report.dead_letters:
        table.add_row("dead letters", "", "none", "", "")
    table.add_section()
    for s in report.streams:
        size = f"{s.bytes / 1_048_576:,.1f} MiB"
        table.add_row(
            "stream", s.name, f"{s.messages:,} msgs", size, f"{s.replicas} replica(s), {s.consumers} consumer(s)"
        )
    console.print(table)
    for problem in report.problems:
        console.print(f"[red]could not read[/red] {problem}")


def usage(console: Console, reply: dict[str, Any]) -> None:
    """``mnemo status --usage``: one row a tenant (``mnemo.rpc.ops.usage.v1``'s reply)."""
    period = f"{reply.get('since') or 'first day'} .. {reply.get('until') or 'today'}"
    table = Table(
        "tenant", "messages", "vectors", "context requests", "context tokens", "LLM prompt", "LLM completion",
        title=f"usage per tenant ({period}; messages and vectors: now)",
    )  # fmt: skip
    for t in reply["tenants"]:
        table.add_row(
            t["tenant_id"], *(f"{t[k]:,}" for k in ("messages", "vectors", "context_requests", "context_tokens",
                                                    "llm_prompt_tokens", "llm_completion_tokens")),
        )  # fmt: skip
    console.print(table)
    for t in reply["tenants"]:
        if t.get("memory_types"):
            growth(console, t, reply.get("growth_since"))
    shown = len(reply["tenants"])
    if shown < reply["total"]:
        console.print(f"{shown} of {reply['total']} tenants: --offset and --limit page through them")


def growth(console: Console, tenant: dict[str, Any], since: str | None) -> None:
    """``--growth-days``: a tenant's memory types, held now and added since the window's first day."""
    table = Table(
        "source",
        "type",
        "held now",
        "added",
        "last day added",
        title=f"{tenant['tenant_id']}: memory growth since {since}",
    )
    for g in tenant["memory_types"]:
        last = g["added"][-1] if g["added"] else None
        added = sum(d["added"] for d in g["added"])
        table.add_row(
            g["source"], g["type"], f"{g['held']:,}", f"{added:,}", f"{last['day']} (+{last['added']})" if last else ""
        )
    console.print(table)
    kinds = ", ".join(f"{k} {n:,}" for k, n in tenant.get("vectors_by_kind", {}).items() if n)
    if kinds:
        console.print(f"vector points: {kinds}")
