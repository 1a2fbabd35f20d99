"""Fresh virtual environments for install tests: made with ``python -m venv``, filled with ``pip install`` from
PyPI, run outside the source tree and without PYTHONPATH, so only what was installed is importable."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What the Dockerfile copies: an install from this copy sees no tests, no build/ left in the tree.
PROJECT_FILES = ("pyproject.toml", "README.md", "mnemo", "clients/python/mnemo_client")


def isolated_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return {**env, "PIP_DISABLE_PIP_VERSION_CHECK": "1", **extra}


def make_venv(path: Path, python: str = sys.executable) -> Path:
    """A new venv at ``path``; returns its interpreter."""
    subprocess.run([python, "-m", "venv", str(path)], check=True, env=isolated_env(), timeout=300)
    return path / "bin" / "python"


def pip_install(python: Path, *requirements: str, cwd: Path) -> None:
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", *requirements],
        env=isolated_env(),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, f"pip install {' '.join(requirements)} failed:\n{done.stdout}\n{done.stderr}"


def project_copy(dest: Path) -> Path:
    """The project's installable files copied to ``dest`` (as the Dockerfile copies them)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in PROJECT_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def doc_block(doc: str, heading: str, language: str) -> str:
    """The first ```language block under the heading of ``doc`` (a Markdown file, relative to the repository's
    root) whose text contains ``heading``: the examples are run where the documentation shows them."""
    text = (ROOT / doc).read_text()
    match = re.search(rf"^#+ [^\n]*{re.escape(heading)}[^\n]*\n", text, flags=re.MULTILINE)
    assert match, f"{doc} has no heading containing {heading!r}"
    block = re.search(rf"^```{language}\n(.*?)^```", text[match.end() :], flags=re.MULTILINE | re.DOTALL)
    assert block, f"no ```{language} block under {heading!r} in {doc}"
    return block.group(1)


def interpreter(version: str) -> str | None:
    """``python<version>`` under pyenv (its shims may not select it) or on PATH, if this machine has it."""
    for candidate in sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/python{version}")):
        return str(candidate)
    found = shutil.which(f"python{version}")
    if found and subprocess.run([found, "-c", ""], capture_output=True).returncode == 0:
        return found
    return None
