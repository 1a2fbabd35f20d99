"""`mnemo mcp` on the whole embedded stack, driven by the `mcp` package's own client as an agent framework drives
it: over stdio (the server a subprocess, as an MCP configuration starts it) and over streamable HTTP. An agent
lists the tools, remembers, finds what it remembered, forgets it and no longer finds it; agents bound to another
character, user or tenant never see it, and cannot change or read it by its id; an engine-bound agent writes a
campaign's memory that the campaign's players find. And the README's MCP configuration runs as written."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from asyncio.subprocess import PIPE
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.e2e.fresh_venv import ROOT, doc_block
from tests.e2e.stackproc import SECURE, StackProcess, free_port

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TENANT, OTHER_TENANT = "t-mcp", "t-mcp-other"
SECRET = "Ana hid the envoy's letter under the chapel's loose stone."
QUERY = "where did Ana hide the envoy's letter?"


def server(stack: StackProcess, *flags: str, nats_user: str = "player") -> StdioServerParameters:
    """`mnemo mcp` as an MCP client starts it: a command, its flags, NATS in its environment."""
    env = {"MNEMO_NATS_URL": stack.nats_url, **stack.client_env(nats_user)}
    return StdioServerParameters(command=sys.executable, args=["-m", "mnemo.runtime.cli", "mcp", *flags], env=env,
                                 cwd=str(ROOT))  # fmt: skip


def bound(tenant: str, user: str, *more: str) -> list[str]:
    return ["--tenant", tenant, "--user", user, *more]


async def call(agent: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await agent.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def refused(agent: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await agent.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    assert result.content[0].type == "text"
    return result.content[0].text


async def search_until(agent: Client, query: str, memory_id: str, *, present: bool) -> list[dict[str, Any]]:
    """The results once ``memory_id`` is among them (or gone from them): the index takes writes asynchronously."""
    deadline = asyncio.get_running_loop().time() + 90
    while True:
        results: list[dict[str, Any]] = (await call(agent, "memory_search", {"query": query, "limit": 50}))["results"]
        if any(r["id"] == memory_id for r in results) == present:
            return results
        assert asyncio.get_running_loop().time() < deadline, f"{memory_id} still {'absent' if present else 'there'}"
        await asyncio.sleep(0.5)


async def test_an_agent_remembers_finds_and_forgets_and_no_other_scope_sees_it(stack: StackProcess) -> None:
    async with Client(server(stack, *bound(TENANT, "u1", "--bot", "maren"))) as maren:
        listed = await maren.list_tools()
        assert {t.name for t in listed.tools} == {
            "memory_remember", "memory_search", "memory_update", "memory_forget", "memory_history",
        }  # fmt: skip
        made = await call(maren, "memory_remember", {"type": "episodic", "content": SECRET, "tags": ["npc:envoy"]})
        memory_id = made["memory_id"]
        assert made["created"]
        hits = await search_until(maren, QUERY, memory_id, present=True)
        hit = next(h for h in hits if h["id"] == memory_id)
        assert (hit["content"], hit["namespace"], hit["bot_id"], hit["tags"]) == (
            SECRET,
            "player:u1",
            "maren",
            ["npc:envoy"],
        )
        assert (await refused(maren, "memory_remember", {"type": "semantic", "content": "x", "owner_namespace": "player:u2"})
                ).startswith("forbidden: this agent may not write 'player:u2'")  # fmt: skip

        others = {
            "another character of the same user": bound(TENANT, "u1", "--bot", "bard"),
            "another user": bound(TENANT, "u2", "--bot", "maren"),
            "the same user in another tenant": bound(OTHER_TENANT, "u1", "--bot", "maren"),
        }
        for who, flags in others.items():
            async with Client(server(stack, *flags)) as other:
                results = (await call(other, "memory_search", {"query": QUERY, "limit": 100}))["results"]
                assert all(r["id"] != memory_id and SECRET not in r["content"] for r in results), who
                for tool in ("memory_history", "memory_forget"):
                    text = await refused(other, tool, {"memory_id": memory_id})
                    assert text.startswith("not_found"), (who, text)
                text = await refused(other, "memory_update", {"memory_id": memory_id, "content": "gone"})
                assert text.startswith("not_found"), (who, text)

        updated = await call(maren, "memory_update", {"memory_id": memory_id, "tags": ["npc:envoy", "chapel"]})
        assert (updated["version"], updated["changed"]) == (2, True)
        gone = await call(maren, "memory_forget", {"memory_id": memory_id, "reason": "the player asked"})
        assert gone == {"memory_id": memory_id, "forgotten": True}
        await search_until(maren, QUERY, memory_id, present=False)
        history = await call(maren, "memory_history", {"memory_id": memory_id})
        assert [v["change"] for v in history["versions"]] == ["remembered", "updated", "forgotten"]
        assert history["forgotten"]
        assert all(v["content"] is None for v in history["versions"]), "once forgotten, the texts are gone"


async def test_an_engine_agent_writes_its_campaign_and_only_its_players_find_it(stack: StackProcess) -> None:
    lore = "The Kestrel's engine room floods whenever the storm bell rings twice."
    gm = server(stack, *bound(TENANT, "gm", "--campaign", "kestrel", "--engine"), nats_user="platform")
    async with Client(gm) as engine:
        text = await refused(engine, "memory_remember", {"type": "declarative", "content": lore,
                                                          "owner_namespace": "campaign:other"})  # fmt: skip
        assert text.startswith("forbidden"), text
        made = await call(engine, "memory_remember", {"type": "declarative", "content": lore,
                                                       "owner_namespace": "campaign:kestrel"})  # fmt: skip
    async with Client(server(stack, *bound(TENANT, "u3", "--campaign", "kestrel"))) as member:
        hits = await search_until(member, "what happens when the storm bell rings?", made["memory_id"], present=True)
        assert next(h for h in hits if h["id"] == made["memory_id"])["namespace"] == "campaign:kestrel"
        # a player's agent has no engine right: its binding refuses a campaign write (as mnemo would)
        text = await refused(member, "memory_remember", {"type": "declarative", "content": lore,
                                                          "owner_namespace": "campaign:kestrel"})  # fmt: skip
        assert text.startswith("forbidden"), text
    async with Client(server(stack, *bound(TENANT, "u4"))) as outsider:
        results = (await call(outsider, "memory_search", {"query": "storm bell", "limit": 100}))["results"]
        assert all(r["id"] != made["memory_id"] for r in results)


@asynccontextmanager
async def http_server(stack: StackProcess, *flags: str) -> AsyncIterator[str]:
    """`mnemo mcp --http` on a free port, until the block ends."""
    port = free_port()
    env = {**os.environ, "MNEMO_NATS_URL": stack.nats_url, **stack.client_env("player")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "mnemo.runtime.cli", "mcp", "--http", "--port", str(port), *flags, env=env, cwd=ROOT
    )
    try:
        for _ in range(1200):  # it imports mnemo, then listens: seconds
            assert proc.returncode is None, f"mnemo mcp --http exited with {proc.returncode}"
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 30)


async def test_the_same_tools_over_streamable_http(stack: StackProcess) -> None:
    async with http_server(stack, *bound(TENANT, "u5")) as url, Client(url) as agent:
        assert len((await agent.list_tools()).tools) == 5
        made = await call(agent, "memory_remember", {"type": "semantic", "content": "u5 keeps bees on the roof."})
        await search_until(agent, "who keeps bees?", made["memory_id"], present=True)
        text = await refused(agent, "memory_search", {"query": "bees", "namespaces": ["player:u1"]})
        assert text.startswith("forbidden"), text


@pytest.mark.skipif(SECURE, reason="the README's configuration connects as `make run` serves, without credentials")
async def test_the_readmes_mcp_configuration_runs_as_written(stack: StackProcess) -> None:
    config = json.loads(doc_block("README.md", "Use it from an LLM agent", "json"))
    (entry,) = config["mcpServers"].values()
    assert entry["env"]["MNEMO_NATS_URL"] == "nats://127.0.0.1:4222", "it connects where `make run` serves"
    command = os.path.join(os.path.dirname(sys.executable), entry["command"])  # the venv's `mnemo`
    params = StdioServerParameters(command=command, args=entry["args"], env={**entry["env"], "MNEMO_NATS_URL":
                                   stack.nats_url})  # fmt: skip
    async with Client(params) as agent:
        made = await call(agent, "memory_remember", {"type": "episodic", "content": "The README's agent was here."})
        await search_until(agent, "was the README's agent here?", made["memory_id"], present=True)


@pytest.mark.skipif(SECURE, reason="the documented agent connects as `make run` serves, without credentials")
async def test_the_documented_agent_runs_as_written(stack: StackProcess, tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(doc_block("docs/memory-api.md", "From an LLM agent", "python"))
    venv_bin = os.path.dirname(sys.executable)  # where `mnemo` is, as after `make install`
    env = {**os.environ, "MNEMO_NATS_URL": stack.nats_url, "PATH": f"{venv_bin}:{os.environ.get('PATH', '')}"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(script), env=env, cwd=tmp_path, stdout=PIPE, stderr=PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 300)
    assert proc.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert "memory_remember" in lines[0]
    assert lines[1].startswith("Ana fears church bells. "), lines
    assert lines[2].startswith("True forbidden: this agent may not search 'player:u2'"), lines
    assert "'forgotten': True" in lines[3], lines
