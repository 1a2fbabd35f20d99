"""Prompt files: discovery by versioned file name, loading, rendering and what the prompts promise."""

from __future__ import annotations

import json
import re

import pytest
from pydantic import BaseModel

from shared.llm.prompts import Prompt, PromptError, available_prompts, load_prompt
from shared.llm.schemas import KnowledgeUpdates, SummaryOutput


def test_shipped_prompts_and_versions() -> None:
    shipped = available_prompts()
    assert shipped["summarize"][0] == 1
    assert shipped["extract_knowledge"][0] == 1
    assert all(v == sorted(v) for v in shipped.values())


def test_load_latest_and_pinned_version() -> None:
    latest = load_prompt("summarize")
    assert latest.version == available_prompts()["summarize"][-1]
    pinned = load_prompt("summarize", version=1)
    assert (pinned.name, pinned.version, pinned.tag) == ("summarize", 1, "summarize.v1")
    assert pinned.text.strip()
    assert load_prompt("summarize", version=1) is pinned  # cached: files never change once released


def test_unknown_prompt_or_version_is_a_clear_error() -> None:
    with pytest.raises(PromptError, match=r"no prompt named 'nope'.*summarize"):
        load_prompt("nope")
    with pytest.raises(PromptError, match="has no version 99"):
        load_prompt("summarize", version=99)


def test_render_substitutes_and_keeps_doubled_braces_literal() -> None:
    prompt = Prompt("t", 1, 'Hello {name}. Reply {{"ok": true}} about {item[0]}.')
    assert prompt.variables == {"name", "item"}
    assert (
        prompt.render(name="Mira {not a field}", item=["x"]) == 'Hello Mira {not a field}. Reply {"ok": true} about x.'
    )


def test_render_rejects_missing_and_unexpected_variables() -> None:
    prompt = Prompt("t", 1, "{a} and {b}")
    with pytest.raises(PromptError, match=r"t\.v1: missing variables \['b'\], unexpected \[\]"):
        prompt.render(a=1)
    with pytest.raises(PromptError, match=r"unexpected \['c'\]"):
        prompt.render(a=1, b=2, c=3)


@pytest.mark.parametrize(
    ("name", "variables", "schema"),
    [
        ("summarize", {"participants", "transcript"}, SummaryOutput),
        ("extract_knowledge", {"characters", "transcript"}, KnowledgeUpdates),
    ],
)
def test_every_shipped_version_renders_and_shows_its_output_shape(
    name: str, variables: set[str], schema: type[BaseModel]
) -> None:
    for version in available_prompts()[name]:
        prompt = load_prompt(name, version)
        assert prompt.variables == variables
        text = prompt.render(**{v: f"<{v} value>" for v in variables})
        assert "<transcript value>" in text
        example = json.loads(re.findall(r"^\{.*\}$", text, flags=re.MULTILINE)[-1])  # the JSON example line
        assert set(example) == set(schema.model_fields)
