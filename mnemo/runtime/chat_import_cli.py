"""``mnemo import-chats FILE... --tenant T --user U``: bring a platform's existing chat histories into mnemo.

Each file is one conversation (a SillyTavern chat JSONL, or an Agnaistic, RisuAI or text-generation-webui chat
export), read and turned into chat events by the memory service's
``chat_import`` package (the same code answers ``mnemo.rpc.chat.import.v1``) and published here through the
public contract with a progress bar. A line that is not a message is reported with its number and reason, and
the rest of the file is still imported; a summary per file ends the run. Exit status: 0 when every line was
imported or skipped on purpose, 1 when some line was refused or a file could not be read or published, 2 for
bad arguments. Running it again records nothing twice (docs/import.md).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from mnemo.runtime.contract_client import ContractError, connected
from mnemo.services.memory.chat_import.detect import FORMATS, parse_chat
from mnemo.services.memory.chat_import.formats import ChatFormatError, ParsedChat, zone_of
from mnemo.services.memory.chat_import.plan import ImportPlan, ImportTarget, PublishReport, plan_import, publish_events
from mnemo.shared.settings import Settings
from mnemo_client import MnemoClient
from mnemo_client.errors import MnemoError
from mnemo_client.wire.contract import MessageCreated


def _target(args: argparse.Namespace) -> ImportTarget:
    bots: dict[str, str] = {}
    default_bot: str | None = None
    for value in args.bot or ():
        name, sep, bot = value.rpartition("=")
        if sep and name and bot:
            bots[name] = bot
        elif not sep and not default_bot:
            default_bot = value
        else:
            raise ValueError(f"--bot {value!r}: give one bot id, or NAME=ID per character")
    if args.conversation and len(args.files) > 1:
        raise ValueError("--conversation names one conversation: give one file with it")
    return ImportTarget(
        tenant_id=args.tenant, user_id=args.user, conversation_id=args.conversation, bots=bots,
        bot_id=default_bot, persona_id=args.persona, with_profiles=args.with_profiles,
    )  # fmt: skip


def _zone(name: str) -> ZoneInfo:
    try:
        return zone_of(name)
    except ValueError as exc:
        raise ValueError(f"--timezone: {exc}") from None


def _started_at(value: str | None) -> datetime | None:
    try:
        return None if value is None else datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"--started-at {value!r}: give an ISO 8601 time, e.g. 2024-05-12T14:00:00Z") from None


def _read(path: Path, zone: ZoneInfo, args: argparse.Namespace) -> ParsedChat:
    text = path.read_text(encoding="utf-8-sig", errors="strict")  # -sig: a byte-order mark some editors add
    return parse_chat(
        text, args.format, zone, include_hidden=args.include_hidden, started_at=_started_at(args.started_at),
        character_name=args.character_name,
    )  # fmt: skip


def _summary(console: Console, path: Path, chat: ParsedChat, plan: ImportPlan, report: PublishReport | None) -> None:
    messages = sum(1 for e in plan.events if isinstance(e, MessageCreated))
    verb = "would publish" if report is None else "published"
    line = f"[bold]{path}[/bold] ({chat.format}): conversation {plan.conversation_id}, {verb} {messages} message(s)"
    if report is not None and report.duplicates:
        line += f" ({report.duplicates} event(s) already stored)"
    if report is not None and report.first is not None and report.last is not None:
        line += f", {report.first.isoformat()} to {report.last.isoformat()}"
    skipped = {**chat.skipped, "swipe alternatives": sum(m.alternatives for m in chat.messages)}
    left = ", ".join(f"{n} {why}" for why, n in skipped.items() if n)
    refused = f"{len(plan.problems)} {chat.unit}(s) refused"
    console.print(line + (f"; not imported: {left}" if left else "") + f"; {refused}")


async def _publish(args: argparse.Namespace, plans: list[tuple[Path, ParsedChat, ImportPlan]]) -> int:
    console, err = Console(soft_wrap=True), Console(stderr=True, soft_wrap=True)
    settings = Settings(service_name="cli", nats_url=args.nats_url) if args.nats_url else Settings(service_name="cli")
    failed = 0
    async with connected(settings) as nc:
        client = MnemoClient(nc)
        try:
            for path, chat, plan in plans:
                with Progress(
                    TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=err, transient=True,
                ) as bar:  # fmt: skip
                    task = bar.add_task(path.name, total=len(plan.events))
                    try:
                        report = await publish_events(client, plan.events, functools.partial(bar.advance, task))
                    except MnemoError as exc:
                        done = int(bar.tasks[0].completed)
                        err.print(f"[red]error[/red] {path}: stopped after {done} event(s): {exc}; run it again")
                        failed += 1
                        continue
                _summary(console, path, chat, plan, report)
        finally:
            await client.close(flush_timeout=5)
    return failed


def run(args: argparse.Namespace) -> int:
    err = Console(stderr=True, soft_wrap=True)
    try:
        target, zone = _target(args), _zone(args.timezone)
        _started_at(args.started_at)
    except ValueError as exc:
        err.print(f"[red]error[/red]: {exc}")
        return 2
    plans: list[tuple[Path, ParsedChat, ImportPlan]] = []
    unreadable = refused = 0
    for path in args.files:
        try:
            chat = _read(path, zone, args)
            plan = plan_import(chat, target)
        except (OSError, UnicodeDecodeError, ChatFormatError, ValueError) as exc:
            err.print(f"[red]error[/red] {path}: {exc}")
            unreadable += 1
            continue
        for problem in plan.problems:
            err.print(f"{path}: {chat.unit} {problem.line}: {problem.reason}")
        refused += len(plan.problems)
        plans.append((path, chat, plan))
    if args.dry_run:
        for path, chat, plan in plans:
            _summary(Console(soft_wrap=True), path, chat, plan, None)
        failed = 0
    else:
        try:
            failed = asyncio.run(_publish(args, plans)) if plans else 0
        except ContractError as exc:
            err.print(f"[red]error[/red] {exc.code}: {exc.message}")
            return 1
    return 1 if unreadable or refused or failed else 0


def add_import_chats_command(sub: Any) -> None:
    imp = sub.add_parser(
        "import-chats",
        help="publish existing chat histories (SillyTavern, Agnaistic, RisuAI, text-generation-webui) as chat "
        "events, with their original times",
        description="Each file is one conversation of --user. Importing a file again records nothing twice. "
        "See docs/import.md.",
    )
    imp.add_argument("files", type=Path, nargs="+", help="chat files (.jsonl, .json), one conversation each")
    imp.add_argument(
        "--format", choices=FORMATS, default="auto",
        help="the files' format (default auto: told apart by their shapes; see docs/import.md)",
    )  # fmt: skip
    imp.add_argument(
        "--started-at",
        help="when the chat began (ISO 8601), for a file without times (Agnaistic): its messages a second apart",
    )
    imp.add_argument("--character-name", help="the character's name, for formats without it (default Character)")
    imp.add_argument("--tenant", required=True, help="the tenant to import into")
    imp.add_argument("--user", required=True, help="the user the conversations belong to")
    imp.add_argument("--conversation", help="the conversation id (one file; default: derived from its header)")
    imp.add_argument(
        "--bot", action="append",
        help="the bot id of the chat's character, or NAME=ID per character of a group chat (repeatable); "
        "default st-<name>",
    )  # fmt: skip
    imp.add_argument("--persona", help="the user's persona id: the author of the user's messages")
    imp.add_argument(
        "--with-profiles", action="store_true",
        help="also publish each bot (and the persona) named as in the file, for a platform that has no profiles yet",
    )  # fmt: skip
    imp.add_argument("--timezone", default="UTC", help="the zone of times written without one (default UTC)")
    imp.add_argument("--include-hidden", action="store_true", help="also import messages hidden from the model")
    imp.add_argument("--dry-run", action="store_true", help="read and check the files, publish nothing")
    imp.add_argument("--nats-url", help="the deployment's NATS (default MNEMO_NATS_URL or nats://127.0.0.1:4222)")
    imp.set_defaults(func=run)
