"""`mnemo mcp`'s refusals, before anything is sent: a call naming a tenant, user or character, or a namespace
its binding does not allow, is a tool error the model reads (never a protocol error or a crash), and so is a
NATS that cannot be reached. Driven through the MCP SDK's own client, in process; what is sent to mnemo is
tested against a real stack in tests/e2e/test_mcp_e2e.py."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client

from mnemo.runtime.agents.binding import Binding
from mnemo.runtime.agents.calls import MemoryToolCalls, ToolFailure
from mnemo.runtime.agents.cli import nats_connector
from mnemo.runtime.agents.mcp_server import build_server
from mnemo.runtime.servers import free_port
from mnemo.shared.settings import Settings
from mnemo_client import MnemoClient

BINDING = Binding("t1", "u1", bot_id="maren", campaign_ids=("kestrel",))


async def never_connect() -> MnemoClient:
    raise AssertionError("a refused call must not reach mnemo")


async def unreachable() -> MnemoClient:
    raise ConnectionRefusedError("nats://127.0.0.1:1")


async def test_the_tools_are_listed_with_their_schemas_over_mcp() -> None:
    calls = MemoryToolCalls(BINDING, never_connect)
    async with Client(build_server(calls)) as client:
        listed = await client.list_tools()
    by_name = {t.name: t for t in listed.tools}
    assert set(by_name) == set(calls.tools)
    for name, tool in calls.tools.items():
        assert by_name[name].input_schema == tool.input_schema
        assert by_name[name].output_schema == tool.output_schema
    assert by_name["memory_search"].annotations
    assert by_name["memory_search"].annotations.read_only_hint
    assert by_name["memory_forget"].annotations
    assert by_name["memory_forget"].annotations.destructive_hint


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("memory_remember", {"type": "semantic", "content": "x", "owner_namespace": "player:u2"}, "forbidden: "),
        ("memory_remember", {"type": "semantic", "content": "x", "owner_namespace": "campaign:kestrel"}, "forbidden"),
        ("memory_remember", {"type": "semantic", "content": "x", "user_id": "u2"}, "forbidden: user_id cannot"),
        ("memory_search", {"query": "x", "tenant_id": "t2"}, "forbidden: tenant_id cannot"),
        ("memory_search", {"query": "x", "bot_id": "bard"}, "forbidden: bot_id cannot"),
        ("memory_search", {"query": "x", "namespaces": ["player:u2"]}, "forbidden: this agent may not search"),
        ("memory_search", {"query": "x", "namespaces": ["character:bard"]}, "forbidden"),
        ("memory_search", {"query": "x", "limit_results": 3}, "bad_request: unknown argument(s) limit_results"),
        ("memory_search", {"query": "x", "namespaces": "player:u1"}, "bad_request: namespaces: give a list"),
        ("memory_forget", {}, "bad_request: memory_id"),
        ("memory_delete_everything", {}, "bad_request: no tool 'memory_delete_everything'"),
    ],
)
async def test_a_refused_call_is_a_tool_error_the_model_reads(
    tool: str, arguments: dict[str, Any], expected: str
) -> None:
    async with Client(build_server(MemoryToolCalls(BINDING, never_connect))) as client:
        result = await client.call_tool(tool, arguments)
        assert result.is_error
        assert result.content[0].type == "text"
        assert result.content[0].text.startswith(expected), result.content[0].text
        again = await client.list_tools()  # the session goes on
        assert len(again.tools) == 5


async def test_mnemo_out_of_reach_is_unavailable_and_the_session_goes_on() -> None:
    async with Client(build_server(MemoryToolCalls(BINDING, unreachable))) as client:
        for _ in range(2):  # each call tries to connect again
            result = await client.call_tool("memory_search", {"query": "the letter"})
            assert result.is_error
            assert result.content[0].type == "text"
            assert result.content[0].text.startswith("unavailable: cannot reach mnemo"), result.content[0].text


async def test_an_engine_binding_writes_only_its_own_campaigns_and_character() -> None:
    calls = MemoryToolCalls(Binding("t1", "u1", bot_id="maren", campaign_ids=("kestrel",), engine=True), unreachable)
    for namespace in ("campaign:other", "character:bard", "player:u2"):
        with pytest.raises(ToolFailure, match="forbidden"):
            await calls.call("memory_remember", {"type": "semantic", "content": "x", "owner_namespace": namespace})
    for namespace in ("campaign:kestrel", "character:maren", "player:u1"):  # allowed: then NATS is tried
        with pytest.raises(ToolFailure, match="unavailable"):
            await calls.call("memory_remember", {"type": "semantic", "content": "x", "owner_namespace": namespace})


ids = st.text(string.ascii_lowercase + string.digits + "-_:", min_size=1, max_size=6)
namespaces = st.builds(lambda k, o: f"{k}:{o}", st.sampled_from(["player", "campaign", "character"]), ids)


@settings(max_examples=100, deadline=None)
@given(
    user=ids, bot=st.none() | ids, campaigns=st.lists(ids, max_size=3), engine=st.booleans(),
    asked=st.lists(namespaces, min_size=1, max_size=4), write=namespaces,
)  # fmt: skip
async def test_no_call_names_a_namespace_outside_its_binding(
    user: str, bot: str | None, campaigns: list[str], engine: bool, asked: list[str], write: str
) -> None:
    binding = Binding("t1", user, bot_id=bot, campaign_ids=tuple(campaigns), engine=engine)
    calls = MemoryToolCalls(binding, unreachable)
    readable = {f"player:{user}", *(f"campaign:{c}" for c in campaigns), *([f"character:{bot}"] if bot else [])}
    with pytest.raises(ToolFailure) as searched:
        await calls.call("memory_search", {"query": "q", "namespaces": asked})
    assert searched.value.code == ("unavailable" if set(asked) <= readable else "forbidden")
    with pytest.raises(ToolFailure) as wrote:
        await calls.call("memory_remember", {"type": "episodic", "content": "c", "owner_namespace": write})
    writable = readable if engine else {f"player:{user}"}
    assert wrote.value.code == ("unavailable" if write in writable else "forbidden")


async def test_the_real_connector_to_a_nats_that_is_not_there_is_unavailable() -> None:
    settings = Settings(service_name="mcp", nats_url=f"nats://127.0.0.1:{free_port()}")
    calls = MemoryToolCalls(BINDING, nats_connector(BINDING, settings, request_timeout=5, wait_s=2))
    for _ in range(2):
        with pytest.raises(ToolFailure) as failed:
            await calls.call("memory_search", {"query": "the letter"})
        assert failed.value.code == "unavailable"
    await calls.close()
