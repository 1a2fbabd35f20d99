"""The README is the front door: at most 200 lines, the two commands first, one worked example (run by
tests/e2e/test_python_client.py), links to the rest. And the documentation holds together: every relative link
of the README, docs/ and the clients' READMEs reaches a file (and a heading, for a link with an anchor), and
every repository path the docs name in code (`mnemo/...`, `tests/...`, ...) exists, so a moved file or a
renamed heading fails here rather than in a reader's hands."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted([README, *(ROOT / "docs").glob("*.md"), ROOT / "clients/python/README.md", ROOT / "clients/js/README.md"])
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
REPO_PATH = re.compile(r"^(?:mnemo|tests|bench|deploy|clients|docs|contracts)/[\w./-]*$")


def test_the_readme_is_at_most_200_lines() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: move the detail to docs/ and link it"


def test_the_readme_opens_with_the_two_commands() -> None:
    first = README.read_text().splitlines()[:6]
    commands = [line.split("#")[0].strip() for line in first if line.startswith("    make ")]
    assert commands[:2] == ["make run", "make test"], first


def test_the_readme_has_one_worked_example_and_the_architecture_picture() -> None:
    text = README.read_text()
    example = re.search(r"^## A worked example\n(.*?)^## ", text, flags=re.MULTILINE | re.DOTALL)
    assert example, "a section `## A worked example`"
    assert "```python\n" in example.group(1), "the worked example the e2e test runs"
    picture = re.search(r"^## How it works\n\n```\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    assert picture, "the architecture picture under `## How it works`"
    assert all(f" {name}" in picture.group(1) for name in ("ingest", "embedding", "context-assembler", "privacy"))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    text = re.sub(r"^```.*?^```", "", doc.read_text(), flags=re.MULTILINE | re.DOTALL)
    for heading in re.findall(r"^#+ (.+)$", text, flags=re.MULTILINE):
        base = slug(heading)
        out.add(base if base not in seen else f"{base}-{seen[base]}")
        seen[base] = seen.get(base, 0) + 1
    return out


def prose(doc: Path) -> str:
    """The text outside fenced code blocks (a link or path inside an example is the example's business)."""
    return re.sub(r"^```.*?^```", "", doc.read_text(), flags=re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_heading(doc: Path) -> None:
    broken = []
    for target in LINK.findall(prose(doc)):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto: outside the repository
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading with anchor #{anchor} in {file.relative_to(ROOT)}")
    assert not broken, f"{doc.relative_to(ROOT)}: " + "; ".join(broken)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_repository_path_named_in_the_docs_exists(doc: Path) -> None:
    missing = []
    for span in CODE_SPAN.findall(prose(doc)):
        for word in span.split():
            word = word.rstrip(".,;:)").split("#")[0].split(":")[0]
            if not REPO_PATH.match(word) or "*" in word or "<" in word:
                continue
            if not (ROOT / word).exists():
                missing.append(word)
    assert not missing, f"{doc.relative_to(ROOT)} names paths that do not exist: {sorted(set(missing))}"
