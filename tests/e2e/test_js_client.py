"""The JavaScript client (clients/js) with Node against the whole embedded stack, its NATS WebSocket listener
on (``MNEMO_NATS__WEBSOCKET_PORT``): the package installed from its lock file (``npm ci``) in a copy of the
repository's files, its generated types checked against the contract, its declarations compiled (``tsc``),
its unit tests run, then clients/js/test/e2e.mjs against the stack over TCP (the Node package) and WebSocket
(the package bundled for the browser by esbuild, as a web page or an edge worker gets it). And the examples of
clients/js/README.md as a user runs them: ``npm install`` of the package into an empty folder, then the first
```js block, as written (it publishes a scene and prints a context), and the WebSocket one, its URL pointed at
the stack's WebSocket listener."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.fresh_venv import ROOT, doc_block
from tests.e2e.stackproc import SECURE, StackProcess, free_port

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

NODE, NPM = shutil.which("node") or "", shutil.which("npm") or ""
if not (NODE and NPM):  # CI installs Node 20 (the Makefile's install step); say so rather than pass
    pytest.skip("the JavaScript client's tests need node and npm on PATH (Node 20+)", allow_module_level=True)


def run(argv: list[str], cwd: Path, timeout: float = 900, **env: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def js_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """clients/js without its node_modules, beside the contract it generates from, installed and checked."""
    root = tmp_path_factory.mktemp("js")
    package = root / "clients" / "js"
    shutil.copytree(ROOT / "clients" / "js", package, ignore=shutil.ignore_patterns("node_modules"))
    (root / "contracts").mkdir()
    shutil.copy2(ROOT / "contracts" / "mnemo.schema.json", root / "contracts")
    run([NPM, "ci", "--prefer-offline", "--no-audit", "--no-fund"], package)
    run([NPM, "run", "check-generated"], package)
    run([NPM, "run", "build"], package)
    run([NPM, "test"], package)
    return package


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackProcess]:
    """The embedded stack with its NATS WebSocket listener on."""
    proc = StackProcess(Path(tmp_path_factory.mktemp("stack")), env={"MNEMO_NATS__WEBSOCKET_PORT": str(free_port())})
    proc.start()
    yield proc
    code = proc.stop()
    assert code == 0, f"stack exited with {code}:\n{proc.log_tail()}"


def node_env(stack: StackProcess) -> dict[str, str]:
    """Where the stack listens, and with ``--secure`` the platform's credentials and the stack's CA."""
    scheme = "wss" if stack.secure else "ws"
    env = {
        "MNEMO_NATS_URL": stack.nats_url,
        "MNEMO_NATS_WS_URL": f"{scheme}://127.0.0.1:{stack.env['MNEMO_NATS__WEBSOCKET_PORT']}",
    }
    if stack.secure:
        home = stack.data_dir / "secure"
        env |= {
            "MNEMO_NATS_USER": "platform",
            "MNEMO_NATS_PASSWORD": (home / "passwords" / "platform.password").read_text().strip(),
            "NODE_EXTRA_CA_CERTS": str(home / "tls" / "ca.pem"),
        }
    return env


def test_the_js_client_covers_the_contract_over_tcp_and_websocket(js_package: Path, stack: StackProcess) -> None:
    # Node 20 has WebSocket behind a flag (22 has it on): the flag stands for a browser's or an edge runtime's.
    done = run([NODE, "--experimental-websocket", "test/e2e.mjs"], js_package, **node_env(stack))
    assert "js client e2e: ok" in done.stdout


@pytest.mark.skipif(SECURE, reason="the documented examples connect as `make run` serves, without credentials or TLS")
def test_the_documented_javascript_examples_run(js_package: Path, stack: StackProcess, tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.mkdir()
    run([NPM, "install", "--no-audit", "--no-fund", str(js_package)], app)
    (app / "example.mjs").write_text(doc_block("clients/js/README.md", "Install and use", "js"))
    done = run([NODE, "example.mjs"], app, timeout=300, **node_env(stack))
    assert "history" in done.stdout, done.stdout
    assert "Its needle points at storms, not north." in done.stdout, "the context with the scene's last line"

    over_ws = doc_block("clients/js/README.md", "Over WebSocket", "js")
    assert "ws://127.0.0.1:8443" in over_ws
    (app / "example_ws.mjs").write_text(over_ws.replace("ws://127.0.0.1:8443", node_env(stack)["MNEMO_NATS_WS_URL"]))
    done = run([NODE, "--experimental-websocket", "example_ws.mjs"], app, timeout=300, **node_env(stack))
    assert " 1 []" in done.stdout, f"the imported book's id, its one entry and no warnings: {done.stdout}"
    assert "not_found" in done.stdout, done.stdout
