"""Prompts as package files, versioned by file name: ``<service package>/prompts/<name>.v<N>.md``.

Each service owns its prompts (``PromptLibrary("mnemo.services.summarizer")``); this module only finds, loads
and renders them.

A prompt file never changes once released; a new wording is a new file (``summarize.v2.md``), so the
``prompt_version`` recorded beside derived events (``Prompt.tag``, e.g. ``summarize.v1``) always names the
exact text used. ``library.load("summarize")`` picks the highest version; pin one with ``version=``.

Templates use ``str.format_map`` fields (``{transcript}``); literal braces, e.g. in a JSON example, are
doubled (``{{`` and ``}}``). ``render`` fails loudly on a missing or an unexpected variable, because either
is a caller bug that would otherwise send a broken prompt to a paid model.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable

from mnemo.shared.llm.port import JsonAsk, PromptMessage, T

_DIRECTORY = "prompts"
_FILE = re.compile(r"\A(?P<name>[a-z0-9_]+)\.v(?P<version>[1-9][0-9]*)\.md\Z")


class PromptError(Exception):
    """A prompt that does not exist, or variables that do not fit it."""


@dataclass(frozen=True, slots=True)
class Prompt:
    name: str
    version: int
    text: str

    @property
    def tag(self) -> str:
        """``<name>.v<version>``: the ``prompt_version`` to record."""
        return f"{self.name}.v{self.version}"

    @property
    def variables(self) -> frozenset[str]:
        """Field names the template needs (``{a.b}`` or ``{a[0]}`` count as ``a``)."""
        fields = (field for _, field, _, _ in string.Formatter().parse(self.text) if field is not None)
        return frozenset(re.split(r"[.\[]", f, maxsplit=1)[0] for f in fields)

    def render(self, **values: object) -> str:
        missing = self.variables - values.keys()
        unexpected = values.keys() - self.variables
        if missing or unexpected:
            raise PromptError(
                f"prompt {self.tag}: missing variables {sorted(missing)}, unexpected {sorted(unexpected)}; "
                f"it takes {sorted(self.variables)}"
            )
        return self.text.format_map(values)

    def ask(self, schema: type[T], **values: object) -> JsonAsk[T]:
        """This prompt rendered with ``values`` as the one user message of a question for a ``schema`` object,
        tagged with this prompt's version."""
        return JsonAsk((PromptMessage.user(self.render(**values)),), schema, self.tag)


@dataclass(frozen=True, slots=True)
class PromptLibrary:
    """The prompts shipped in ``<package>/prompts/``."""

    package: str

    def available(self) -> dict[str, list[int]]:
        """Every shipped prompt name with its versions, ascending."""
        found: dict[str, list[int]] = {}
        for entry in self._directory().iterdir():
            match = _FILE.match(entry.name)
            if match:
                found.setdefault(match["name"], []).append(int(match["version"]))
        return {name: sorted(versions) for name, versions in sorted(found.items())}

    def load(self, name: str, version: int | None = None) -> Prompt:
        """The prompt ``name`` at ``version``, or its latest version. Raises ``PromptError`` if absent."""
        return _load(self, name, version)

    def _directory(self) -> Traversable:
        return resources.files(self.package).joinpath(_DIRECTORY)


@cache
def _load(library: PromptLibrary, name: str, version: int | None) -> Prompt:
    versions = library.available().get(name)
    if not versions:
        raise PromptError(f"no prompt named {name!r} in {library.package}; shipped: {sorted(library.available())}")
    chosen = versions[-1] if version is None else version
    if chosen not in versions:
        raise PromptError(f"prompt {name!r} has no version {chosen}; shipped versions: {versions}")
    text = library._directory().joinpath(f"{name}.v{chosen}.md").read_text(encoding="utf-8")
    return Prompt(name=name, version=chosen, text=text)
