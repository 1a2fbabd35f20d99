"""The memory API as LLM tool definitions, derived from the contract registry's wire models (never written by
hand, so a field added to the contract reaches the tools): OpenAI function tools, Anthropic tools and MCP tools.

A tool's input schema is its request model's JSON Schema with the bound fields (tenant, user, character) taken
out, ``$ref`` inlined (some frameworks do not resolve them), optional fields without their ``null`` branch (to
leave one out is to say nothing) and no generated titles. Given a :class:`Binding`, the namespaces a call may
name become an ``enum``, so the model sees exactly what it may touch.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from mnemo.runtime.agents.binding import Binding
from mnemo.shared.contract_registry import operation as registry_operation

Format = Literal["openai", "anthropic", "mcp"]
FORMATS: tuple[Format, ...] = ("openai", "anthropic", "mcp")
#: What the binding fixes: a model that could name these could act for someone else.
BOUND_FIELDS = ("tenant_id", "user_id", "bot_id")

# What each tool is for, told to the model (the parameters' meanings come from the contract's descriptions).
_PURPOSE = {
    "memory.remember": "Save a memory worth keeping for later conversations: an event, a fact, a rule or a "
    "how-to, with tags and links to assets. Returns its memory_id.",
    "memory.search": "Search long-term memory: what was remembered, summaries of past conversations, facts "
    "learned in them and lore. Results are ranked, each with its memory id, content, tags and score.",
    "memory.update": "Change a memory found by memory_search or made by memory_remember; what is left out "
    "stays as it was. Give expected_version to refuse if someone changed it since.",
    "memory.forget": "Forget a memory for good: it is no longer found or used (only the record that it was "
    "forgotten stays).",
    "memory.history": "Every version of a memory: what changed, who changed it and when.",
}
TOOL_OPERATIONS = tuple(_PURPOSE)


@dataclass(frozen=True)
class AgentTool:
    name: str  # `memory_remember`: the registry's name with `_` (function names may not hold dots)
    operation: str  # the contract registry's name, `memory.remember`
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]

    @property
    def parameters(self) -> frozenset[str]:
        return frozenset(self.input_schema["properties"])


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every local ``$ref`` replaced by its definition and ``$defs`` gone (the wire models are
    not recursive)."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            merged = {
                **copy.deepcopy(defs[ref.removeprefix("#/$defs/")]),
                **{k: v for k, v in node.items() if k != "$ref"},
            }
            return walk(merged)
        return {k: walk(v) for k, v in node.items() if k != "$defs"}

    out: dict[str, Any] = walk(schema)
    return out


def without_titles(node: Any) -> Any:
    """Drop pydantic's generated ``title`` keywords (a property *named* ``title`` stays)."""
    if isinstance(node, list):
        return [without_titles(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: without_titles(sub) for name, sub in value.items()}
        else:
            out[key] = without_titles(value)
    return out


def _not_null(prop: dict[str, Any]) -> dict[str, Any]:
    """An optional property without its ``null`` branch: absent means "not given" to the model."""
    branches = prop.get("anyOf")
    if not isinstance(branches, list) or {"type": "null"} not in branches:
        return prop
    rest = [b for b in branches if b != {"type": "null"}]
    base = {k: v for k, v in prop.items() if k != "anyOf" and not (k == "default" and v is None)}
    return {**rest[0], **base} if len(rest) == 1 else {**base, "anyOf": rest}


@functools.cache
def _model_schema(operation: str, side: Literal["request", "reply"]) -> dict[str, Any]:
    op = registry_operation(operation)
    model = op.payload if side == "request" else op.reply
    assert model is not None, operation  # request-reply operations only
    schema: dict[str, Any] = without_titles(inline_refs(model.model_json_schema()))
    return schema


def _input_schema(operation: str, binding: Binding | None) -> dict[str, Any]:
    schema = _model_schema(operation, "request")  # shared: what a binding changes is copied first
    props: dict[str, Any] = {
        name: _not_null(prop) for name, prop in schema["properties"].items() if name not in BOUND_FIELDS
    }
    required = [name for name in schema.get("required", []) if name in props]
    if "owner_namespace" in props:
        # The binding's own namespace is the default, so an agent that only keeps its user's memories names none.
        required.remove("owner_namespace")
        owner = props["owner_namespace"] = copy.deepcopy(props["owner_namespace"])
        owner["description"] += f". Default: {binding.own if binding else 'player:<your user>'}"
        if binding:
            owner["enum"] = list(binding.writable)
    if "namespaces" in props:
        searched = props["namespaces"] = copy.deepcopy(props["namespaces"])
        searched["description"] = "the namespaces to search; default: every one this agent may read"
        if binding:
            searched["items"]["enum"] = list(binding.readable)
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _description(operation: str, binding: Binding | None) -> str:
    text = _PURPOSE[operation]
    if binding is None:
        return text
    if operation == "memory.remember":
        return f"{text} May write: {', '.join(binding.writable)}."
    if operation == "memory.search":
        return f"{text} Searches: {', '.join(binding.readable)}."
    return text


@functools.lru_cache(maxsize=256)
def agent_tools(binding: Binding | None = None) -> tuple[AgentTool, ...]:
    """The memory API's tools; with ``binding``, the namespaces it allows are spelled out (cached: read them,
    never change them)."""
    tools = []
    for operation in TOOL_OPERATIONS:
        tools.append(
            AgentTool(
                name=operation.replace(".", "_"),
                operation=operation,
                description=_description(operation, binding),
                input_schema=_input_schema(operation, binding),
                output_schema=_model_schema(operation, "reply"),
            )
        )
    return tuple(tools)


def render(tools: Iterable[AgentTool], fmt: Format) -> list[dict[str, Any]]:
    """The tools as the framework's API takes them: OpenAI's ``tools`` (Chat Completions), Anthropic's ``tools``
    (Messages), or MCP ``Tool`` objects (``tools/list``)."""
    if fmt == "openai":
        return [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
            }
            for t in tools
        ]
    if fmt == "anthropic":
        return [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools]
    return [
        {"name": t.name, "description": t.description, "inputSchema": t.input_schema, "outputSchema": t.output_schema}
        for t in tools
    ]
