"""One tool call of an agent, carried out through the Python client for the agent's :class:`Binding`.

The binding's tenant, user and character are put into every request (an argument naming them is refused, not
overridden, so the model learns it cannot); the namespaces a call names are checked against the binding before
anything is sent, and an update, forget or history first reads the memory's namespace and character (its
history) so an engine-bound agent cannot reach a campaign it is not bound to, nor an agent another character's
memory. Whatever fails becomes a :class:`ToolFailure` whose text a model can read and act on: the contract's
error code, then what to do.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from mnemo.runtime.agents.binding import Binding
from mnemo.runtime.agents.tools import BOUND_FIELDS, AgentTool, agent_tools
from mnemo.shared.namespaces import Viewer, memory_audience
from mnemo_client import MnemoClient
from mnemo_client.errors import MnemoError

log = logging.getLogger("mnemo.agents")
Connect = Callable[[], Awaitable[MnemoClient]]


class ToolFailure(Exception):
    """A tool call that did not happen, with the text the model is shown (``code: what and what to do``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


def _validation_text(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


class MemoryToolCalls:
    """The memory tools of one binding. ``connect`` opens the client on first use (and again after a failed
    connection), so a server started before NATS answers with ``unavailable`` instead of not starting."""

    def __init__(self, binding: Binding, connect: Connect) -> None:
        self.binding = binding
        self.tools = {tool.name: tool for tool in agent_tools(binding)}
        self._connect = connect
        self._client: MnemoClient | None = None

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close(flush_timeout=5)

    async def _mnemo(self) -> MnemoClient:
        if self._client is None:
            try:
                self._client = await self._connect()
            except Exception as exc:  # any connection failure: the model is told, the server lives on
                raise ToolFailure("unavailable", f"cannot reach mnemo over NATS ({exc}); try again later") from exc
        return self._client

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """The reply of tool ``name`` as JSON, or :class:`ToolFailure`."""
        tool = self.tools.get(name)
        if tool is None:
            raise ToolFailure("bad_request", f"no tool {name!r}; the tools are {', '.join(sorted(self.tools))}")
        fields = dict(arguments or {})
        self._check_arguments(tool, fields)
        try:
            reply = await self._dispatch(tool, fields)
        except ValidationError as exc:
            raise ToolFailure("bad_request", _validation_text(exc)) from None
        except MnemoError as exc:
            raise ToolFailure(exc.code, exc.message) from None
        except ToolFailure:
            raise
        except Exception as exc:  # a bug or a lost connection must not end the session: say so, log it
            log.exception("tool %s failed", name)
            raise ToolFailure("internal", f"the call failed ({type(exc).__name__}); try again later") from None
        return reply.model_dump(mode="json")

    def _check_arguments(self, tool: AgentTool, fields: dict[str, Any]) -> None:
        bound = sorted(set(fields) & set(BOUND_FIELDS))
        if bound:
            raise ToolFailure(
                "forbidden", f"{', '.join(bound)} cannot be given: this agent's scope is fixed by its configuration"
            )
        unknown = sorted(set(fields) - tool.parameters)
        if unknown:
            raise ToolFailure("bad_request", f"unknown argument(s) {', '.join(unknown)} for {tool.name}")
        b = self.binding
        if "owner_namespace" in fields and fields["owner_namespace"] not in b.writable:
            raise ToolFailure(
                "forbidden",
                f"this agent may not write {fields['owner_namespace']!r}; it may write {', '.join(b.writable)}",
            )
        if tool.operation == "memory.search":
            named = fields.get("namespaces") or []
            if not isinstance(named, list):
                raise ToolFailure("bad_request", 'namespaces: give a list of namespaces, e.g. ["player:<user>"]')
            outside = [n for n in named if n not in b.readable]
            if outside:
                raise ToolFailure(
                    "forbidden", f"this agent may not search {', '.join(map(repr, outside))}; it may search "
                    f"{', '.join(b.readable)}"
                )  # fmt: skip

    def _scoped(self, fields: dict[str, Any]) -> dict[str, Any]:
        return {**fields, "tenant_id": self.binding.tenant_id, "user_id": self.binding.user_id}

    async def _dispatch(self, tool: AgentTool, fields: dict[str, Any]) -> BaseModel:
        b = self.binding
        if tool.operation == "memory.search":
            mnemo = await self._mnemo()
            # No namespaces named (or none at all): every one the binding may read, campaigns included.
            request = {**self._scoped(fields), "namespaces": fields.get("namespaces") or list(b.readable)}
            request["bot_id"] = b.bot_id
            return await mnemo.search_memories(**request)
        if tool.operation == "memory.remember":
            mnemo = await self._mnemo()
            request = {"owner_namespace": b.own, **self._scoped(fields), "bot_id": b.bot_id}
            return await mnemo.remember(**request)
        # update, forget, history: only a memory in a namespace this agent may write, that its search would show
        # (another character's memory is not this agent's to read or change, even in the user's own namespace).
        memory_id = fields.get("memory_id")
        if not isinstance(memory_id, str) or not memory_id:
            raise ToolFailure("bad_request", "memory_id: give the id of a memory (memory_search finds them)")
        mnemo = await self._mnemo()
        history = await mnemo.memory_history(**self._scoped({"memory_id": memory_id}))
        viewer = Viewer(b.tenant_id, b.user_id, b.bot_id, b.campaign_ids)
        if history.owner_namespace not in b.writable or not viewer.sees(
            history.owner_namespace, memory_audience(history.bot_id)
        ):
            raise ToolFailure("not_found", f"no memory {memory_id!r} this agent may change")
        if tool.operation == "memory.history":
            return history
        if tool.operation == "memory.forget":
            return await mnemo.forget_memory(**self._scoped(fields))
        return await mnemo.update_memory(**self._scoped(fields))
