"""The `mnemo` commands against a running embedded stack (one stack for the module), each through the public
contract: `lore import/list/export`, `context` (sections, sources, activated lore and why, degraded),
`memories list` with its filters, `memories edit-summary`, `dlq list/redrive`; last, `replay` on the stopped stack's data with its
progress bar and totals. Commands run in this process (`mnemo.runtime.cli.main`), the scene is published with plain
nats-py as a platform would."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nats
import pytest

from mnemo.runtime.cli import main
from tests.e2e.scenes import turn
from tests.e2e.stackproc import StackProcess

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TENANT, USER, CONV, BOT, PERSONA = "cli-tenant", "u1", "c1", "guide", "p1"
WHO = ["--tenant", TENANT, "--user", USER]
LINES = [
    "We landed on the planet at dawn and the shuttle bay was empty.",
    "Welcome. The shuttle bay is behind us; the corridor leads to the hub.",
    "Which way to the Research Labs? These samples go to the Marine Lab.",
    "Take the east corridor, past the hydroponics ring, then the second door.",
    "I will carry the samples myself, they are fragile.",
    "Then walk slowly; the floor is wet near the pumps.",
]


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch, stack: StackProcess) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # rich wraps tables to the terminal's width
    for name, value in stack.client_env().items():  # `make test-e2e-secure`: the commands connect as admin
        monkeypatch.setenv(name, value)


def mnemo(capsys: pytest.CaptureFixture[str], stack: StackProcess, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--nats-url", stack.nats_url])
    out, err = capsys.readouterr()
    return code, out, err


def mnemo_json(capsys: pytest.CaptureFixture[str], stack: StackProcess, *argv: str) -> Any:
    code, out, err = mnemo(capsys, stack, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def until(fetch: Callable[[], Any], ready: Callable[[Any], bool], timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    value = fetch()
    while not ready(value) and time.monotonic() < deadline:
        time.sleep(0.5)
        value = fetch()
    return value


async def _publish(
    stack: StackProcess, items: list[tuple[str, dict[str, Any] | bytes, dict[str, str]]], user: str = "platform"
) -> None:
    nc = await nats.connect(stack.nats_url, **stack.client_options(user))
    try:
        js = nc.jetstream()
        for subject, body, headers in items:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            await js.publish(subject, data, headers=headers)
    finally:
        await nc.drain()


def publish(
    stack: StackProcess, items: list[tuple[str, dict[str, Any] | bytes, dict[str, str]]], user: str = "platform"
) -> None:
    asyncio.run(_publish(stack, items, user))


def scene(conv: str = CONV, lines: list[str] = LINES) -> list[tuple[str, dict[str, Any] | bytes, dict[str, str]]]:
    start = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
    return [
        ("mnemo.chat.message.created.v1", msg, {"Nats-Msg-Id": f"{conv}-{i}"})
        for i, line in enumerate(lines)
        for msg in [turn(i, line, start + timedelta(minutes=i), tenant=TENANT, user=USER, conv=conv,
                         message_id=f"{conv}-m{i}", persona=(PERSONA, "Mira"), bot=(BOT, "Guide"))]
    ]  # fmt: skip


def test_lore_import_list_and_export(capsys, stack: StackProcess, shared_dir: Path, tmp_path: Path):
    book = shared_dir / "fixtures/lorebooks/chub-wi_lythora-station.json"
    code, out, err = mnemo(capsys, stack, "lore", "import", str(book), "--bot", BOT, "--name", "Lythora", *WHO)
    assert code == 0, err
    assert "lorebook imported" in out
    assert "Lythora" not in err
    listed = mnemo_json(capsys, stack, "lore", "list", "--tenant", TENANT)
    (item,) = listed["books"]
    assert (item["name"], item["owner_user_id"], item["bot_ids"], listed["total"]) == ("Lythora", USER, [BOT], 1)
    assert item["entries"] > 5
    assert mnemo_json(capsys, stack, "lore", "list", "--tenant", TENANT, "--bot", "nobody")["books"] == []
    code, out, _ = mnemo(capsys, stack, "lore", "list", "--tenant", TENANT)
    assert item["lorebook_id"] in out
    assert "Lythora" in out

    out_file = tmp_path / "export.json"
    code, _, err = mnemo(
        capsys, stack, "lore", "export", item["lorebook_id"], "--tenant", TENANT, "--out", str(out_file)
    )
    assert code == 0, err
    exported = json.loads(out_file.read_text())
    assert len(exported["entries"]) == item["entries"]
    code, _, err = mnemo(capsys, stack, "lore", "export", "no-such-book", "--tenant", TENANT)
    assert (code, "not_found" in err) == (1, True)


def test_context_shows_sections_sources_and_why_lore_fired(capsys, stack: StackProcess):
    publish(stack, scene())
    question = "Is the Marine Lab inside the Research Labs?"
    ask = ["context", *WHO, "--conversation", CONV, "--bot", BOT, "--message", question]
    reply = until(lambda: mnemo_json(capsys, stack, *ask), lambda r: LINES[-1] in r["context"])
    assert LINES[-1] in reply["context"]
    lore = {s["id"]: s["detail"] for s in reply["sources"] if s["kind"] == "lore"}
    assert "key: Research Labs (secondary: Marine Lab)" in lore.values(), lore
    code, out, _ = mnemo(capsys, stack, *ask)
    assert code == 0
    for shown in ("history (", "activated lore", "key: Research Labs (secondary: Marine Lab)", "degraded:"):
        assert shown in out, out
    assert "bot_profile" in out, "the bot was never sent: the context says so among the degraded parts"


def test_memories_list_with_filters(capsys, stack: StackProcess):
    listing = ["memories", "list", *WHO, "--source", "memory"]
    page = until(lambda: mnemo_json(capsys, stack, *listing), lambda r: r["total"] >= 1)
    assert page["total"] >= 1, "the summarizer wrote no summary of six messages"
    memory = page["items"][0]
    assert memory["source"] == "memory"
    assert mnemo_json(capsys, stack, *listing, "--bot", BOT)["total"] == page["total"]
    assert mnemo_json(capsys, stack, *listing, "--bot", "someone-else")["total"] == 0
    assert mnemo_json(capsys, stack, *listing, "--converted", "yes")["total"] == 0
    assert mnemo_json(capsys, stack, *listing, "--limit", "1")["limit"] == 1
    code, out, _ = mnemo(capsys, stack, *listing)
    assert code == 0
    assert memory["id"] in out
    assert f"of {page['total']}" in out
    code, _, err = mnemo(capsys, stack, "memories", "list", *WHO, "--limit", "0")
    assert code == 2
    assert "limit" in err


def test_memories_edit_summary_is_a_new_version(capsys, stack: StackProcess):
    listing = ["memories", "list", *WHO, "--source", "memory"]
    page = until(lambda: mnemo_json(capsys, stack, *listing), lambda r: r["total"] >= 1)
    memory = page["items"][0]
    text = "The guide led Mira east to the Research Labs; she carried the samples herself."
    edit = ["memories", "edit-summary", memory["id"], "--text", text, *WHO]
    reply = mnemo_json(capsys, stack, *edit)
    assert (reply["previous_id"], reply["changed"]) == (memory["id"], True)
    assert reply["memory_id"] != memory["id"]
    items = {i["id"]: i for i in mnemo_json(capsys, stack, *listing, "--include-retired")["items"]}
    assert (items[reply["memory_id"]]["text"], items[reply["memory_id"]]["status"]) == (text, "active")
    assert (items[memory["id"]]["text"], items[memory["id"]]["status"]) == (memory["text"], "edited")
    code, out, _ = mnemo(capsys, stack, *edit)  # the same edit again: the same new version, nothing appended
    assert (code, out.startswith(f"unchanged: {memory['id']} -> {reply['memory_id']}")) == (0, True), out
    code, _, err = mnemo(capsys, stack, "memories", "edit-summary", memory["id"], "--text", "other", *WHO)
    assert (code, "bad_request" in err, reply["memory_id"] in err) == (1, True, True), err


def test_dead_letters_are_listed_and_redriven(capsys, stack: StackProcess):
    publish(stack, [("mnemo.chat.message.created.v1", b"{not json", {"Nats-Msg-Id": "broken-1"})])
    letters = until(lambda: mnemo_json(capsys, stack, "dlq", "list", "--service", "ingest"), lambda r: len(r) >= 1)
    broken = next(d for d in letters if d["data"] == "{not json")
    assert broken["original_subject"] == "mnemo.chat.message.created.v1"
    assert broken["reason"]
    code, out, _ = mnemo(capsys, stack, "dlq", "list")
    assert str(broken["seq"]) in out
    assert "mnemo.chat.message.created.v1" in out

    # A message parked after a transient failure (the stack was down, say) goes back where it came from.
    lost = "The lost line that came back from the dead letters."
    (_, parked, _), = scene("c-dlq", [lost])  # fmt: skip
    headers = {"Mnemo-Dlq-Original-Subject": "mnemo.chat.message.created.v1", "Mnemo-Dlq-Service": "ingest",
               "Mnemo-Dlq-Reason": "timeout", "Mnemo-Dlq-Attempts": "5", "Nats-Msg-Id": "parked-1"}  # fmt: skip
    publish(stack, [("mnemo.dlq.ingest.v1", parked, headers)], user="admin")  # as a service would park it
    letters = mnemo_json(capsys, stack, "dlq", "list", "--service", "ingest")
    seq = next(d["seq"] for d in letters if d["reason"] == "timeout")
    code, out, err = mnemo(capsys, stack, "dlq", "redrive", "--seq", str(seq))
    assert code == 0, err
    assert "1 redriven" in out
    assert seq not in [d["seq"] for d in mnemo_json(capsys, stack, "dlq", "list")]
    ask = ["context", *WHO, "--conversation", "c-dlq", "--bot", BOT]
    assert lost in until(lambda: mnemo_json(capsys, stack, *ask), lambda r: lost in r["context"])["context"]
    code, _, err = mnemo(capsys, stack, "dlq", "redrive", "--seq", str(seq))
    assert (code, "no such dead letter" in err) == (2, True)


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def test_erase_user_asks_for_yes_then_erases_that_user(capsys, stack: StackProcess):
    gone, conv = "u-gone", "c-gone"
    lines = ["The lighthouse keeper hid the key under the third step.", "I will remember the third step."]
    start = datetime(2026, 10, 2, 9, 0, tzinfo=UTC)
    publish(stack, [
        ("mnemo.chat.message.created.v1", turn(i, line, start + timedelta(minutes=i), tenant=TENANT, user=gone,
         conv=conv, message_id=f"gone-m{i}", persona=(PERSONA, "Mira"), bot=(BOT, "Guide")), {"Nats-Msg-Id": f"gone-{i}"})
        for i, line in enumerate(lines)
    ])  # fmt: skip
    ask = ["context", "--tenant", TENANT, "--user", gone, "--conversation", conv, "--bot", BOT, "--message", "Key?"]
    until(lambda: mnemo_json(capsys, stack, *ask), lambda r: lines[-1] in r["context"])
    code, _, err = mnemo(capsys, stack, "erase-user", "--tenant", TENANT, "--user", gone)
    assert code == 2
    assert "--yes" in err
    erased = mnemo_json(capsys, stack, "erase-user", "--tenant", TENANT, "--user", gone, "--yes")
    assert erased["keys_destroyed"] >= 1, erased
    after = mnemo_json(capsys, stack, *ask)
    assert not any(line in after["context"] for line in lines), after["context"]


def test_replay_shows_progress_and_totals(stack: StackProcess):
    """Last: replay reads the log itself (the one command that does), so the stack is stopped first."""
    assert stack.stop() == 0
    done = subprocess.run(
        [sys.executable, "-m", "mnemo.runtime.cli", "replay", "--data-dir", str(stack.data_dir),
         "--nats-url", stack.nats_url, "--mongodb-url", stack.mongo_url],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env={"COLUMNS": "200", **_env()},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "replaying" in done.stdout
    assert "message.recorded" in done.stdout
    assert "lorebook.imported" in done.stdout
    total = int(done.stdout.split("replay done: ")[1].split()[0])
    assert total > len(LINES)
    assert f"{total:,}" in done.stdout.split("total")[-1]
