"""`mnemo mcp`: the memory tools as a Model Context Protocol server (the official ``mcp`` SDK's low-level
server, over stdio or streamable HTTP), bound to one tenant and user.

Tool schemas are ``tools.py``'s; each call goes through ``calls.py`` to mnemo over NATS with the Python client.
A call that fails is an MCP tool result with ``isError`` and a text the model reads (``forbidden: ...``), never
a protocol error or a crash: the session goes on. Logs go to stderr (stdout is the stdio transport's).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from mnemo.runtime.agents.calls import Connect, MemoryToolCalls, ToolFailure

log = logging.getLogger("mnemo.agents")
NAME = "mnemo-memory"
_READ_ONLY = {"memory.search", "memory.history"}


def _annotations(operation: str) -> types.ToolAnnotations:
    return types.ToolAnnotations(
        read_only_hint=operation in _READ_ONLY,
        destructive_hint=operation == "memory.forget",
        idempotent_hint=operation != "memory.remember",  # remember is, with an idempotency_key
        open_world_hint=False,
    )


def build_server(calls: MemoryToolCalls) -> Server[Any]:
    b = calls.binding
    listing = types.ListToolsResult(
        tools=[
            types.Tool(
                name=t.name,
                description=t.description,
                input_schema=t.input_schema,
                output_schema=t.output_schema,
                annotations=_annotations(t.operation),
            )
            for t in calls.tools.values()
        ]
    )

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> Any:
        return listing

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Any:
        try:
            reply = await calls.call(params.name, params.arguments)
        except ToolFailure as failure:
            log.info("tool %s refused: %s", params.name, failure)
            return types.CallToolResult(content=[types.TextContent(text=str(failure))], is_error=True)
        text = json.dumps(reply, ensure_ascii=False)
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=reply)

    character = f" as character {b.bot_id}" if b.bot_id else ""
    return Server(
        NAME,
        version="1",
        instructions=f"Long-term memory of user {b.user_id}{character} (tenant {b.tenant_id}): search it before "
        "answering about the past, remember what should outlast this conversation.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(binding_calls: MemoryToolCalls) -> None:
    server = build_server(binding_calls)
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await binding_calls.close()


async def serve_http(binding_calls: MemoryToolCalls, host: str, port: int) -> None:
    """Streamable HTTP on ``http://host:port/mcp``. Whoever reaches it acts as the bound user: keep it on
    loopback or behind the platform's own authentication."""
    import uvicorn

    server = build_server(binding_calls)
    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    try:
        await uvicorn.Server(config).serve()
    finally:
        await binding_calls.close()


__all__ = ["Connect", "build_server", "serve_http", "serve_stdio"]
