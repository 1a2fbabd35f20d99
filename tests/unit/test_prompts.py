"""Prompt files: discovery by versioned file name, loading, rendering and what the prompts promise."""

from __future__ import annotations

import json
import re

import pytest
from pydantic import BaseModel

from mnemo.services.memory_extractor.schemas import KnowledgeUpdates
from mnemo.services.summarizer.schemas import SummaryOutput
from mnemo.shared.llm.prompts import Prompt, PromptError, PromptLibrary

SUMMARIZER = PromptLibrary("mnemo.services.summarizer")
EXTRACTOR = PromptLibrary("mnemo.services.memory_extractor")


def test_shipped_prompts_and_versions() -> None:
    assert SUMMARIZER.available()["summarize"][0] == 1
    assert EXTRACTOR.available()["extract_knowledge"][0] == 1
    for library in (SUMMARIZER, EXTRACTOR):
        assert all(v == sorted(v) for v in library.available().values())


def test_load_latest_and_pinned_version() -> None:
    latest = SUMMARIZER.load("summarize")
    assert latest.version == SUMMARIZER.available()["summarize"][-1]
    pinned = SUMMARIZER.load("summarize", version=1)
    assert (pinned.name, pinned.version, pinned.tag) == ("summarize", 1, "summarize.v1")
    assert pinned.text.strip()
    assert SUMMARIZER.load("summarize", version=1) is pinned  # cached: files never change once released


def test_unknown_prompt_or_version_is_a_clear_error() -> None:
    with pytest.raises(PromptError, match=r"no prompt named 'nope'.*summarize"):
        SUMMARIZER.load("nope")
    with pytest.raises(PromptError, match="has no version 99"):
        SUMMARIZER.load("summarize", version=99)


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
    ("library", "name", "variables", "schema"),
    [
        (SUMMARIZER, "summarize", {"participants", "transcript"}, SummaryOutput),
        (EXTRACTOR, "extract_knowledge", {"characters", "transcript"}, KnowledgeUpdates),
    ],
)
def test_every_shipped_version_renders_and_shows_its_output_shape(
    library: PromptLibrary, name: str, variables: set[str], schema: type[BaseModel]
) -> None:
    for version in library.available()[name]:
        prompt = library.load(name, version)
        assert prompt.variables == variables
        text = prompt.render(**{v: f"<{v} value>" for v in variables})
        assert "<transcript value>" in text
        example = json.loads(re.findall(r"^\{.*\}$", text, flags=re.MULTILINE)[-1])  # the JSON example line
        assert set(example) == set(schema.model_fields)
