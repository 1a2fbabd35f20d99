"""`mnemo lore|memories|context|dlq|gateway ...` (the memory API's commands: ``cli_memory.py``): commands against a running deployment, through the public
contract over NATS (``mnemo/runtime/contract_client.py``), never the database. Each prints rich tables, or the
reply as JSON with ``--json``; an error reply prints its code and message and exits 1."""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, get_args

from rich.console import Console

from mnemo.runtime import cli_memory, views
from mnemo.runtime.contract_client import ContractError, connected, contract_call
from mnemo.runtime.dlq import dead_letters, redrive
from mnemo.shared import subjects
from mnemo.shared.settings import Settings
from mnemo_client.wire import contract as c
from mnemo_client.wire import lore_contract as lc
from mnemo_client.wire import memory_contract as mc
from mnemo_client.wire import privacy_contract as pc

Command = Callable[[argparse.Namespace, Console], Coroutine[Any, Any, Any]]


def _settings(args: argparse.Namespace) -> Settings:
    if args.nats_url:
        return Settings(service_name="cli", nats_url=args.nats_url)
    return Settings(service_name="cli")


def _run(command: Command) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        console = Console(soft_wrap=False)
        try:
            result: Any = asyncio.run(command(args, console))
        except ContractError as exc:
            Console(stderr=True).print(f"[red]error[/red] {exc.code}: {exc.message}")
            return 1
        except (ValueError, OSError) as exc:  # a request the contract refuses, an unreadable file
            Console(stderr=True).print(f"[red]error[/red]: {exc}")
            return 2
        if args.json and result is not None:
            print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
        return 0

    return run


async def _call(args: argparse.Namespace, subject: str, request: Any) -> dict[str, Any]:
    async with connected(_settings(args)) as nc:
        return await contract_call(nc, subject, request, wait_s=args.timeout)


async def lore_import(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    raw = await asyncio.to_thread(Path(args.file).read_bytes)
    file: dict[str, Any]
    try:
        parsed = json.loads(raw)
        file = {"data": parsed} if isinstance(parsed, dict) else {"data_base64": base64.b64encode(raw).decode()}
    except ValueError:
        file = {"data_base64": base64.b64encode(raw).decode()}  # a PNG card or another binary file
    request = lc.LoreImportRequest(
        tenant_id=args.tenant, owner_user_id=args.user, name=args.name or Path(args.file).stem,
        format=args.format, attach_to_bots=args.bot or [], **file,
    )  # fmt: skip
    reply = await _call(args, subjects.LORE_IMPORT, request)
    if not args.json:
        views.lore_import(console, reply)
    return reply


async def lore_export(args: argparse.Namespace, console: Console) -> None:
    request = lc.LoreExportRequest(tenant_id=args.tenant, lorebook_id=args.lorebook_id)
    reply = await _call(args, subjects.LORE_EXPORT, request)
    document = json.dumps(reply if args.json else reply["data"], indent=2, ensure_ascii=False)
    if args.out in (None, "-"):
        print(document)
    else:
        await asyncio.to_thread(Path(args.out).write_text, document + "\n")
        Console(stderr=True).print(
            f"wrote {reply['name']!r} ({len(reply['data'].get('entries', {}))} entries) to {args.out}"
        )


async def lore_list(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    request = lc.LoreListRequest(tenant_id=args.tenant, owner_user_id=args.user, bot_id=args.bot)
    reply = await _call(args, subjects.LORE_LIST, request)
    if not args.json:
        views.lore_books(console, reply)
    return reply


async def memories_list(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    converted = {None: None, "yes": True, "no": False}[args.converted]
    request = mc.MemoryListRequest(
        tenant_id=args.tenant, user_id=args.user, source=args.source, type=args.type, bot_id=args.bot,
        conversation_id=args.conversation, converted_to_lore=converted, include_retired=args.include_retired, limit=args.limit, offset=args.offset,
    )  # fmt: skip
    reply = await _call(args, subjects.MEMORY_LIST, request)
    if not args.json:
        views.memories(console, reply)
    return reply


async def memory_edit(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    request = mc.MemoryEditRequest(tenant_id=args.tenant, user_id=args.user, memory_id=args.memory_id, text=args.text)
    reply = await _call(args, subjects.MEMORY_EDIT, request)
    if not args.json:
        done = "edited" if reply["changed"] else "unchanged"
        console.print(f"{done}: {reply['previous_id']} -> {reply['memory_id']} (the new version's id)")
    return reply


async def memory_api(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    return await cli_memory.run(args, console, _call)


async def context(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    request = c.ContextAssembleRequest(
        tenant_id=args.tenant, user_id=args.user, conversation_id=args.conversation, bot_id=args.bot,
        persona_id=args.persona, campaign_id=args.campaign, user_message=args.message, max_tokens=args.max_tokens,
    )  # fmt: skip
    reply = await _call(args, subjects.CONTEXT_ASSEMBLE, request)
    if not args.json:
        views.context(console, reply)
    return reply


async def dlq_list(args: argparse.Namespace, console: Console) -> list[dict[str, Any]]:
    async with connected(_settings(args)) as nc:
        letters = (await dead_letters(nc, args.service))[-args.limit :]
    if not args.json:
        views.dead_letters(console, letters)
    return [{**vars(d), "data": d.data.decode(errors="replace")} for d in letters]


async def dlq_redrive(args: argparse.Namespace, console: Console) -> list[dict[str, Any]]:
    if not args.seq and not args.all:
        raise ValueError("name the dead letters to redrive (--seq N, repeatable) or give --all")
    async with connected(_settings(args)) as nc:
        letters = await dead_letters(nc, args.service)
        chosen = letters if args.all else [d for d in letters if d.seq in set(args.seq)]
        missing = set(args.seq or ()) - {d.seq for d in chosen}
        if missing:
            raise ValueError(f"no such dead letter: {', '.join(map(str, sorted(missing)))}")
        outcomes = await redrive(nc, chosen)
    if not args.json:
        views.redriven(console, outcomes)
    return [{"seq": d.seq, "subject": d.original_subject, "outcome": o} for d, o in outcomes]


async def erase_user(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    if not args.yes:
        raise ValueError("erasing a user cannot be undone (docs/privacy.md): add --yes")
    request = pc.EraseUserRequest(tenant_id=args.tenant, user_id=args.user)
    reply = await _call(args, subjects.PRIVACY_ERASE_USER, request)
    if not args.json:
        deleted = ", ".join(f"{what} {n}" for what, n in sorted(reply["deleted"].items()) if n)
        console.print(f"erased {args.tenant}/{args.user}: {reply['keys_destroyed']} data key(s) destroyed; {deleted}")
    return reply


def _common(p: argparse.ArgumentParser, *, tenant: bool = True, user: bool = True) -> None:
    p.add_argument("--nats-url", help="the deployment's NATS (default MNEMO_NATS_URL or nats://127.0.0.1:4222)")
    p.add_argument("--json", action="store_true", help="print the reply as JSON instead of tables")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the reply")
    if tenant:
        p.add_argument("--tenant", required=True, help="the tenant to act in")
    if user:
        p.add_argument("--user", required=True, help="the acting user")


def add_commands(sub: Any) -> None:
    """The contract commands, added to the `mnemo` parser's subcommands."""
    lore = sub.add_parser("lore", help="lorebooks: import, export, list").add_subparsers(dest="lore_cmd", required=True)
    imp = lore.add_parser("import", help="import a lorebook or character card file (JSON or PNG)")
    imp.add_argument("file", type=Path)
    imp.add_argument("--bot", action="append", help="attach it to this bot (repeatable)")
    imp.add_argument("--name", help="the book's name (default: the file name)")
    imp.add_argument("--format", default="auto", choices=list(get_args(lc.LoreFormat)))
    _common(imp)
    imp.set_defaults(func=_run(lore_import))
    exp = lore.add_parser("export", help="export a book as SillyTavern World Info")
    exp.add_argument("lorebook_id")
    exp.add_argument("--out", help="file to write (default: stdout)")
    _common(exp, user=False)
    exp.set_defaults(func=_run(lore_export))
    lst = lore.add_parser("list", help="the tenant's books (of one owner, or attached to one bot)")
    lst.add_argument("--user", help="only this owner's books")
    lst.add_argument("--bot", help="only books attached to this bot")
    _common(lst, user=False)
    lst.set_defaults(func=_run(lore_list))

    era = sub.add_parser("erase-user", help="erase a user by crypto-shredding (their keys, rows, vectors, messages)")
    era.add_argument("--yes", action="store_true", help="confirm: an erasure cannot be undone")
    _common(era)
    era.set_defaults(func=_run(erase_user))

    mem = sub.add_parser("memories", help="a user's memories").add_subparsers(dest="memories_cmd", required=True)
    ml = mem.add_parser("list", help="one page of memories, legacy lore and knowledge, newest first")
    ml.add_argument("--source", default="all", choices=["all", "memory", "knowledge"])
    ml.add_argument("--type", choices=list(get_args(mc.ItemType)), help="only items of this type")
    ml.add_argument("--bot", help="only items about this bot")
    ml.add_argument("--conversation", help="only items from this conversation")
    ml.add_argument("--converted", choices=["yes", "no"], help="only summaries converted to lore (or not)")
    ml.add_argument("--include-retired", action="store_true", help="also consolidated or stale summaries")
    ml.add_argument("--limit", type=int, default=50)
    ml.add_argument("--offset", type=int, default=0)
    _common(ml)
    ml.set_defaults(func=_run(memories_list))
    me = mem.add_parser("edit-summary", help="edit a memory's (a summary's) text: a new version, a new id")
    me.add_argument("memory_id", help="the summary's id (its current version)")
    me.add_argument("--text", required=True, help="the new text")
    _common(me)
    me.set_defaults(func=_run(memory_edit))
    cli_memory.add_commands(mem, _common, _run(memory_api))

    ctx = sub.add_parser("context", help="ask for a context: sections, sources, activated lore and why, degraded")
    ctx.add_argument("--conversation", required=True)
    ctx.add_argument("--bot", required=True, help="the character about to speak")
    ctx.add_argument("--persona")
    ctx.add_argument("--campaign")
    ctx.add_argument("--message", default="", help="the user message being answered")
    ctx.add_argument("--max-tokens", type=int, default=8000)
    _common(ctx)
    ctx.set_defaults(func=_run(context))

    dlq = sub.add_parser("dlq", help="dead letters (stream MNEMO_DLQ)").add_subparsers(dest="dlq_cmd", required=True)
    dl = dlq.add_parser("list", help="the dead letters, oldest first, with their reasons")
    dl.add_argument("--service", help="only this service's (e.g. ingest)")
    dl.add_argument("--limit", type=int, default=100, help="show the newest N")
    _common(dl, tenant=False, user=False)
    dl.set_defaults(func=_run(dlq_list))
    dr = dlq.add_parser("redrive", help="send dead letters back to their original subjects, then delete them")
    dr.add_argument("--seq", type=int, action="append", help="the dead letter's sequence (repeatable)")
    dr.add_argument("--all", action="store_true", help="every dead letter (of --service, if given)")
    dr.add_argument("--service", help="only this service's")
    _common(dr, tenant=False, user=False)
    dr.set_defaults(func=_run(dlq_redrive))


def gateway_command(args: argparse.Namespace) -> int:
    if args.action == "new-key":
        if not args.tenant:
            print("usage: mnemo gateway new-key TENANT", file=sys.stderr)
            return 2
        from mnemo.services.gateway.auth import new_key

        key, line = new_key(args.tenant, engine=args.engine, operator=args.operator)
        print(f"key (give it to the platform; it is not stored): {key}\nline for MNEMO_GATEWAY__API_KEYS_FILE:\n{line}")
        return 0
    from mnemo.services.gateway.serve import main

    main()
    return 0
