"""The workbench's browser tests: `make run`'s demo as a user starts it, and Debian's Chromium driven by Playwright.

``demo`` starts ``make run`` (its own ports and data directory, the gateway on a free port, one more API key for
another tenant) in its own process group, reads the ``workbench: <url>`` and key lines it prints, and waits for
the demo scene to be played. ``page`` is a fresh browser context signed in with the demo key. Playwright drives
``/usr/bin/chromium`` (never a downloaded browser); without it the tests skip, except under CI, where a missing
browser is a failure (``make chromium`` installs it there).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mnemo.runtime.servers import free_port

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
#: Without the background-networking flags Chromium keeps trying to reach the internet, which this machine refuses.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = ROOT / "docs" / "workbench"
AXE = ROOT / "workbench" / "node_modules" / "axe-core" / "axe.min.js"
OTHER_TENANT = "t-elsewhere"


@dataclass(frozen=True)
class Demo:
    url: str  # the workbench, as `make run` printed it
    key: str  # the demo tenant's key, as printed
    other_key: str  # a key of another tenant
    gateway: str  # the gateway's base URL
    nats_url: str  # the stack's NATS (the operator views' test dead-letters events there)
    log: Path


def _needs_chromium() -> None:
    if Path(CHROMIUM).exists():
        return
    message = f"Debian's Chromium is missing at {CHROMIUM} (make chromium, as root)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _printed(log: Path, pattern: str) -> str | None:
    found = re.search(pattern, log.read_text(errors="replace"), re.MULTILINE)
    return found.group(1).strip() if found else None


# Package scope: the demo stack stops when tests/ui ends instead of running beside the rest of `make test`.
@pytest.fixture(scope="package")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    _needs_chromium()
    data = tmp_path_factory.mktemp("workbench-demo")
    log = data / "make-run.log"
    other_key = "other-" + secrets.token_urlsafe(16)
    nats_url = f"nats://127.0.0.1:{free_port()}"
    args = (
        f"--nats-url {nats_url} "
        f"--mongodb-url mongodb://127.0.0.1:{free_port()}/?directConnection=true --data-dir {data / 'stack'}"
    )
    env = {
        **os.environ,
        "MNEMO_GATEWAY__PORT": "0",
        "MNEMO_GATEWAY__API_KEYS": f'{{"{other_key}": "{OTHER_TENANT} operator"}}',  # an operator: still none of demo's
        "PYTHONUNBUFFERED": "1",
    }
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            ["make", "--no-print-directory", "run", f"ARGS={args}"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped with one SIGINT, as Ctrl-C would
        )
    try:
        deadline = time.monotonic() + 300
        while not (data / "stack" / "demo-played").exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"make run did not play the demo:\n{log.read_text(errors='replace')[-4000:]}")
            time.sleep(0.5)
        url = _printed(log, r"^workbench: (\S+)$")
        key = _printed(log, r"^workbench API key \(tenant demo\): (\S+)$")
        gateway = _printed(log, r"^mnemo gateway listening on (\S+)$")
        if not (url and key and gateway):
            raise RuntimeError(f"make run did not print the workbench's lines:\n{log.read_text(errors='replace')}")
        yield Demo(url=url, key=key, other_key=other_key, gateway=gateway, nats_url=nats_url, log=log)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(90)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


# Package scope, not session: Playwright's sync API keeps an asyncio loop running in this thread while it is open,
# and every async test collected after tests/ui (tests/unit in `make test`) would then fail to start its own.
@pytest.fixture(scope="package")
def browser(demo: Demo) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any, demo: Demo) -> Iterator[Any]:
    """A new browser context signed in to the workbench with the demo tenant's key."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(60_000)  # the stack shares two cores with the test: answers may take seconds
    tab = context.new_page()
    sign_in(tab, demo.url, demo.key)
    yield tab
    context.close()


def sign_in(tab: Any, url: str, key: str) -> None:
    tab.goto(url)
    tab.get_by_label("API key").fill(key)
    tab.get_by_role("button", name="Open").click()
    tab.get_by_test_id("tenant").wait_for()


def open_view(tab: Any, name: str) -> None:
    tab.get_by_role("navigation", name="Views").get_by_role("link", name=name).click()
    tab.get_by_role("heading", level=1, name=name).wait_for()


def accessibility_problems(tab: Any) -> list[str]:
    """axe-core's serious and critical violations of WCAG 2 A/AA on the page as it is now."""
    if not tab.evaluate("() => typeof window.axe !== 'undefined'"):
        # Evaluated over the DevTools protocol: the workbench's CSP (scripts from its origin only) stays on.
        tab.evaluate(AXE.read_text())
    result = tab.evaluate(
        "async () => await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21aa']}})"
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def screenshot(tab: Any, name: str) -> None:
    """The view as it is now, into docs/workbench/<name>.png (committed, shown in the docs), when
    ``MNEMO_UI_SHOTS`` is set (`make screenshots`): otherwise every run would rewrite the committed images with
    a few pixels changed and leave the checkout dirty."""
    if not os.environ.get("MNEMO_UI_SHOTS"):
        return
    SHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)
