"""`mnemo tools` (the memory API as OpenAI, Anthropic or MCP tool definitions, JSON on stdout) and `mnemo mcp`
(the MCP server). The binding comes from flags, else from ``MNEMO_AGENT__*``; NATS from ``MNEMO_NATS_URL`` /
``--nats-url`` and ``MNEMO_NATS__*`` (user, password, TLS: ``player`` by default, ``platform`` with ``--engine``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from mnemo.runtime.agents.binding import SECTION, AgentSettings, Binding
from mnemo.runtime.agents.calls import Connect
from mnemo.runtime.agents.tools import FORMATS, agent_tools, render
from mnemo.shared import natsconn
from mnemo.shared.settings import Settings, read_section
from mnemo_client import MnemoClient


def binding_from(args: argparse.Namespace, conf: AgentSettings) -> Binding:
    return Binding(
        tenant_id=args.tenant or conf.tenant_id or "",
        user_id=args.user or conf.user_id or "",
        bot_id=args.bot or conf.bot_id,
        campaign_ids=tuple(args.campaign or conf.campaign_ids),
        engine=args.engine or conf.engine,
    )


def cmd_tools(args: argparse.Namespace) -> int:
    conf = read_section(SECTION, AgentSettings)
    binding = None
    if args.tenant or args.user or conf.tenant_id or conf.user_id:
        try:
            binding = binding_from(args, conf)
        except ValueError as exc:
            print(f"mnemo tools: {exc}", file=sys.stderr)
            return 2
    print(json.dumps(render(agent_tools(binding), args.format), indent=2, ensure_ascii=False))
    return 0


def nats_connector(binding: Binding, settings: Settings, request_timeout: float, wait_s: float = 10.0) -> Connect:
    """Opens the Python client over NATS as the binding's user (``player``, or ``platform`` with the engine's
    right, unless ``MNEMO_NATS__USER`` says otherwise). Once connected it reconnects for ever (a call meanwhile
    is ``unavailable``); a first connection that takes over ``wait_s`` fails, and the next call tries again."""

    async def connect() -> MnemoClient:
        identity = "platform" if binding.engine else "player"
        opening = natsconn.connect(
            settings, identity, name=f"mnemo-mcp-{binding.tenant_id}", connect_timeout=5, max_reconnect_attempts=-1
        )
        nc = await asyncio.wait_for(opening, wait_s)
        return MnemoClient(nc, request_timeout=request_timeout, owns_connection=True, engine=binding.engine)

    return connect


def cmd_mcp(args: argparse.Namespace) -> int:
    from mnemo.runtime.agents.calls import MemoryToolCalls
    from mnemo.runtime.agents.mcp_server import serve_http, serve_stdio

    conf = read_section(SECTION, AgentSettings)
    try:
        binding = binding_from(args, conf)
    except ValueError as exc:
        print(f"mnemo mcp: {exc}", file=sys.stderr)
        return 2
    settings = Settings(service_name="mcp", **({"nats_url": args.nats_url} if args.nats_url else {}))
    calls = MemoryToolCalls(binding, nats_connector(binding, settings, conf.request_timeout_s))
    if args.http:
        host, port = args.host or conf.http_host, args.port if args.port is not None else conf.http_port
        print(f"mnemo mcp listening on http://{host}:{port}/mcp", file=sys.stderr, flush=True)
        asyncio.run(serve_http(calls, host, port))
    else:
        asyncio.run(serve_stdio(calls))
    return 0


def _binding_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenant", help="the tenant (MNEMO_AGENT__TENANT_ID)")
    p.add_argument("--user", help="the user the tools act for (MNEMO_AGENT__USER_ID)")
    p.add_argument("--bot", help="the character the agent plays (MNEMO_AGENT__BOT_ID)")
    p.add_argument("--campaign", action="append", help="a campaign it may search (repeatable)")
    p.add_argument("--engine", action="store_true", help="write with the engine's right (campaign, character)")


def add_agent_commands(sub: Any) -> None:
    tools = sub.add_parser(
        "tools",
        help="print the memory API as LLM tool definitions (JSON)",
        description="OpenAI (Chat Completions `tools`), Anthropic (Messages `tools`) or MCP tool definitions "
        "derived from the contract's models; with --tenant/--user the namespaces that binding allows are listed.",
    )
    tools.add_argument("--format", choices=FORMATS, default="openai")
    _binding_flags(tools)
    tools.set_defaults(func=cmd_tools)
    mcp = sub.add_parser(
        "mcp",
        help="serve the memory API as MCP tools (stdio, or streamable HTTP with --http), bound to one user",
        description="An MCP server whose tools remember, search, update, forget and read the history of one "
        "tenant's user's memories (docs/memory-api.md). The model cannot name another tenant, user or character.",
    )
    _binding_flags(mcp)
    mcp.add_argument("--nats-url", help="where NATS listens (default MNEMO_NATS_URL)")
    mcp.add_argument("--http", action="store_true", help="streamable HTTP on --host:--port/mcp instead of stdio")
    mcp.add_argument("--host", help="--http: address (MNEMO_AGENT__HTTP_HOST, default 127.0.0.1)")
    mcp.add_argument("--port", type=int, help="--http: port (MNEMO_AGENT__HTTP_PORT, default 8765)")
    mcp.set_defaults(func=cmd_mcp)
