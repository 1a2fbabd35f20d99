"""`mnemo memories remember|search|update|forget|history`: the memory API from a terminal, over NATS.

Each builds the contract's request (so a bad flag is refused before anything is sent), calls the subject
(``--engine``: the engine's twin, for campaign and character namespaces; the NATS user must hold the right)
and prints a table, or the reply as JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any, get_args

from rich.console import Console
from rich.table import Table

from mnemo.shared import subjects
from mnemo_client.wire import memory_api_contract as ma
from mnemo_client.wire.contract import Asset, MemoryType

Call = Callable[[argparse.Namespace, str, Any], Any]


def _subject(args: argparse.Namespace, plain: str, engine: str) -> str:
    return engine if getattr(args, "engine", False) else plain


def _asset(text: str) -> dict[str, str]:
    """``URI,MEDIA_TYPE[,TITLE]``."""
    parts = text.split(",", 2)
    if len(parts) < 2:
        raise ValueError(f"--asset {text!r}: give URI,MEDIA_TYPE[,TITLE]")
    return {"uri": parts[0], "media_type": parts[1], **({"title": parts[2]} if len(parts) == 3 else {})}


def _metadata(pairs: list[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; a value that reads as JSON (a number, true, null) is taken as such."""
    out: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"--meta {pair!r}: give KEY=VALUE")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def remember_request(args: argparse.Namespace) -> ma.MemoryRememberRequest:
    return ma.MemoryRememberRequest(
        tenant_id=args.tenant, user_id=args.user, owner_namespace=args.namespace or f"player:{args.user}",
        type=args.type, content=args.content, title=args.title, tags=args.tag or [],
        assets=[Asset.model_validate(_asset(a)) for a in args.asset or ()], metadata=_metadata(args.meta),
        bot_id=args.bot, conversation_id=args.conversation, occurred_at=args.occurred_at,
        idempotency_key=args.key,
    )  # fmt: skip


def search_request(args: argparse.Namespace) -> ma.MemorySearchRequest:
    return ma.MemorySearchRequest(
        tenant_id=args.tenant, user_id=args.user, query=args.query, namespaces=args.namespace, types=args.type,
        sources=args.source, tags=args.tag or [], tags_match="all" if args.all_tags else "any", bot_id=args.bot,
        since=args.since, until=args.until, limit=args.limit, recency_half_life_days=args.half_life,
    )  # fmt: skip


def update_request(args: argparse.Namespace) -> ma.MemoryUpdateRequest:
    return ma.MemoryUpdateRequest(
        tenant_id=args.tenant, user_id=args.user, memory_id=args.memory_id, content=args.content, title=args.title,
        type=args.type, tags=args.tag, expected_version=args.expected_version,
    )  # fmt: skip


async def run(args: argparse.Namespace, console: Console, call: Call) -> dict[str, Any]:
    """One memory command: the request from its flags, the reply shown."""
    verb = args.memories_cmd
    if verb == "remember":
        subject = _subject(args, subjects.MEMORY_REMEMBER, subjects.MEMORY_ENGINE_REMEMBER)
        reply: dict[str, Any] = await call(args, subject, remember_request(args))
    elif verb == "search":
        reply = await call(args, subjects.MEMORY_SEARCH, search_request(args))
    elif verb == "update":
        reply = await call(
            args, _subject(args, subjects.MEMORY_UPDATE, subjects.MEMORY_ENGINE_UPDATE), update_request(args)
        )
    elif verb == "forget":
        request = ma.MemoryForgetRequest(tenant_id=args.tenant, user_id=args.user, memory_id=args.memory_id,
                                         reason=args.reason)  # fmt: skip
        reply = await call(args, _subject(args, subjects.MEMORY_FORGET, subjects.MEMORY_ENGINE_FORGET), request)
    else:
        request_h = ma.MemoryHistoryRequest(tenant_id=args.tenant, user_id=args.user, memory_id=args.memory_id)
        reply = await call(args, _subject(args, subjects.MEMORY_HISTORY, subjects.MEMORY_ENGINE_HISTORY), request_h)
    if not args.json:
        show(console, verb, reply)
    return reply


def show(console: Console, verb: str, reply: dict[str, Any]) -> None:
    if verb == "search":
        table = Table("score", "dense", "lexical", "recency", "source", "namespace", "type", "title", "id",
                      title=f"{len(reply['results'])} result(s)" + (f", degraded: {reply['degraded']}" if reply["degraded"] else ""))  # fmt: skip
        for hit in reply["results"]:
            parts = hit["score_parts"]
            table.add_row(f"{hit['score']:.3f}", f"{parts['dense']:.2f}", f"{parts['lexical']:.2f}",
                          f"{parts['recency']:.2f}", hit["source"], hit["namespace"], hit["type"], hit["title"],
                          hit["id"])  # fmt: skip
    elif verb == "history":
        table = Table("version", "change", "by", "at", "title", "content",
                      title=f"{reply['memory_id']} in {reply['owner_namespace']}" + (" (forgotten)" if reply["forgotten"] else ""))  # fmt: skip
        for v in reply["versions"]:
            table.add_row(str(v["version"]), v["change"], v["by_user_id"], str(v["at"])[:19], v.get("title") or "",
                          v.get("content") or "")  # fmt: skip
    else:
        table = Table(show_header=False, title=f"memory {verb}")
        for key, value in reply.items():
            table.add_row(key, str(value))
    console.print(table)


def add_commands(mem: Any, common: Callable[[argparse.ArgumentParser], None], runner: Callable[..., Any]) -> None:
    """The memory API's subcommands, added to `mnemo memories`."""
    types = list(get_args(MemoryType))
    rem = mem.add_parser("remember", help="write a memory (docs/memory-api.md)")
    rem.add_argument("--content", required=True)
    rem.add_argument("--type", required=True, choices=types)
    rem.add_argument("--namespace", help="player:<user> (default), campaign:<id> or character:<bot>")
    rem.add_argument("--title")
    rem.add_argument("--tag", action="append", help="repeatable")
    rem.add_argument("--asset", action="append", help="URI,MEDIA_TYPE[,TITLE] (repeatable)")
    rem.add_argument("--meta", action="append", help="KEY=VALUE (repeatable)")
    rem.add_argument("--bot", help="the character who knows it")
    rem.add_argument("--conversation")
    rem.add_argument("--occurred-at", help="RFC 3339")
    rem.add_argument("--key", help="idempotency key: a retry makes nothing new")
    sea = mem.add_parser("search", help="ranked memories with their score's parts")
    sea.add_argument("--query", default="")
    sea.add_argument("--namespace", action="append", help="repeatable; default: the user's own (and --bot's)")
    sea.add_argument("--type", action="append", choices=types)
    sea.add_argument("--source", action="append", choices=list(get_args(ma.SearchSource)))
    sea.add_argument("--tag", action="append")
    sea.add_argument("--all-tags", action="store_true", help="every --tag (default: any)")
    sea.add_argument("--bot", help="search as this character")
    sea.add_argument("--since")
    sea.add_argument("--until")
    sea.add_argument("--limit", type=int, default=10)
    sea.add_argument("--half-life", type=float, help="recency half-life in days (0: off)")
    upd = mem.add_parser("update", help="a new version of a memory")
    upd.add_argument("memory_id")
    upd.add_argument("--content")
    upd.add_argument("--title")
    upd.add_argument("--type", choices=types)
    upd.add_argument("--tag", action="append", help="the new tags (repeatable)")
    upd.add_argument("--expected-version", type=int)
    fgt = mem.add_parser("forget", help="forget a memory (rows and vectors go)")
    fgt.add_argument("memory_id")
    fgt.add_argument("--reason")
    his = mem.add_parser("history", help="every version of a memory")
    his.add_argument("memory_id")
    for p in (rem, upd, fgt, his):
        p.add_argument("--engine", action="store_true", help="the engine's subject (campaign and character)")
    for p in (rem, sea, upd, fgt, his):
        common(p)
        p.set_defaults(func=runner)
