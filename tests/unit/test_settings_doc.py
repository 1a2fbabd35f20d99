"""The settings reference is generated from the settings models: it names every variable a process reads."""

from __future__ import annotations

from pathlib import Path

from mnemo.runtime.settings_doc import SERVICE_SECTIONS, rows, settings_markdown
from mnemo.shared.settings import Settings, read_section

DOC = Path(__file__).resolve().parents[2] / "docs" / "settings.md"


def test_the_committed_reference_is_the_generated_one():
    assert DOC.read_text() == settings_markdown(), "docs/settings.md is stale: run `make docs`"


def test_every_documented_variable_is_read_from_the_environment(monkeypatch):
    """Each leaf row's variable really sets that setting (the naming rule of the tree holds everywhere)."""
    for section, model in SERVICE_SECTIONS:
        for variable, type_, default, _ in rows(model, f"MNEMO_{section.upper()}__"):
            if type_ != "int":
                continue
            wanted = int(default.strip("`")) + 1  # next to the default: within every field's bounds here
            monkeypatch.setenv(variable, str(wanted))
            value = read_section(section, model)
            path = variable.removeprefix(f"MNEMO_{section.upper()}__").lower().split("__")
            for part in path:
                value = getattr(value, part)
            assert value == wanted, variable
            monkeypatch.delenv(variable)
    monkeypatch.setenv("MNEMO_DELIVERY__MAX_DELIVER", "7")
    assert Settings().delivery.max_deliver == 7
