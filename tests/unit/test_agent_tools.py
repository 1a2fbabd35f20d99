"""The memory API's LLM tool definitions (mnemo/runtime/agents/tools.py) follow the contract's wire models: each
tool's parameters are its request model's fields less the bound ones (tenant, user, character), the registry's
own example requests validate against them and bad values do not, no `$ref` is left for a framework to resolve,
and the three formats carry the same schema. A binding's namespaces are spelled out as an `enum`."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from mnemo.runtime.agents.binding import Binding
from mnemo.runtime.agents.cli import cmd_tools
from mnemo.runtime.agents.tools import BOUND_FIELDS, FORMATS, TOOL_OPERATIONS, agent_tools, render
from mnemo.runtime.cli import build_parser
from mnemo.shared.contract_registry import operation

TOOLS = agent_tools()


def _nodes(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [n for item in node for n in _nodes(item)]
    if isinstance(node, dict):
        return [node, *(n for value in node.values() for n in _nodes(value))]
    return []


def _bound_removed(example: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in example.items() if k not in BOUND_FIELDS}


def test_there_is_one_tool_per_memory_call() -> None:
    assert [t.operation for t in TOOLS] == list(TOOL_OPERATIONS)
    assert {t.name for t in TOOLS} == {
        "memory_remember", "memory_search", "memory_update", "memory_forget", "memory_history",
    }  # fmt: skip


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_the_parameters_are_the_request_models_fields_less_the_bound_ones(tool: Any) -> None:
    model = operation(tool.operation).payload
    assert tool.parameters == set(model.model_fields) - set(BOUND_FIELDS)
    required = {name for name, field in model.model_fields.items() if field.is_required()}
    assert set(tool.input_schema["required"]) == required - set(BOUND_FIELDS) - {"owner_namespace"}
    assert tool.input_schema["additionalProperties"] is False
    for name in tool.parameters:  # the contract's descriptions reach the model
        description = model.model_fields[name].description
        if description and name != "namespaces":
            assert description in tool.input_schema["properties"][name]["description"], name


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_the_schemas_are_self_contained_json_schema(tool: Any) -> None:
    for schema in (tool.input_schema, tool.output_schema):
        Draft202012Validator.check_schema(schema)
        assert not any("$ref" in node or "$defs" in node for node in _nodes(schema))


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_the_registrys_examples_validate_and_bad_values_do_not(tool: Any) -> None:
    op = operation(tool.operation)
    inputs = Draft202012Validator(tool.input_schema)
    example = _bound_removed(op.example)
    assert not list(inputs.iter_errors(example))
    assert op.reply_example is not None
    assert not list(Draft202012Validator(tool.output_schema).iter_errors(op.reply_example))
    assert list(inputs.iter_errors({**example, "user_id": "someone-else"})), "a bound field is not a parameter"
    assert list(inputs.iter_errors({**example, "limit": 0, "type": "dream", "memory_id": ""}))


def test_a_binding_spells_out_the_namespaces_it_allows() -> None:
    player = {t.name: t for t in agent_tools(Binding("t1", "u1", bot_id="maren", campaign_ids=("kestrel",)))}
    remember = player["memory_remember"].input_schema["properties"]["owner_namespace"]
    assert remember["enum"] == ["player:u1"]
    search = player["memory_search"].input_schema["properties"]["namespaces"]["items"]
    assert search["enum"] == ["player:u1", "campaign:kestrel", "character:maren"]
    engine = {t.name: t for t in agent_tools(Binding("t1", "u1", bot_id="maren", campaign_ids=("k",), engine=True))}
    owner = engine["memory_remember"].input_schema["properties"]["owner_namespace"]
    assert owner["enum"] == ["player:u1", "campaign:k", "character:maren"]
    assert "campaign:k" in engine["memory_remember"].description


def test_a_binding_needs_a_tenant_and_a_user() -> None:
    with pytest.raises(ValueError, match="tenant_id"):
        Binding("", "u1")
    with pytest.raises(ValueError, match="user_id"):
        Binding("t1", "")


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_carries_the_same_schema_under_its_own_keys(fmt: Any) -> None:
    rendered = render(TOOLS, fmt)
    for tool, out in zip(TOOLS, rendered, strict=True):
        if fmt == "openai":
            assert out["type"] == "function"
            body, schema = out["function"], out["function"]["parameters"]
        elif fmt == "anthropic":
            body, schema = out, out["input_schema"]
        else:
            body, schema = out, out["inputSchema"]
            assert out["outputSchema"] == tool.output_schema
        assert body["name"] == tool.name
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", body["name"])
        assert body["description"] == tool.description
        assert schema == tool.input_schema
    assert json.loads(json.dumps(rendered)) == rendered


def test_mnemo_tools_prints_them(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MNEMO_AGENT__TENANT_ID", raising=False)
    monkeypatch.delenv("MNEMO_AGENT__USER_ID", raising=False)
    args = build_parser().parse_args(["tools", "--format", "anthropic", "--tenant", "t1", "--user", "u1"])
    assert cmd_tools(args) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == render(agent_tools(Binding("t1", "u1")), "anthropic")
    args = build_parser().parse_args(["tools", "--tenant", "t1"])
    assert cmd_tools(args) == 2, "a binding without a user is refused"
