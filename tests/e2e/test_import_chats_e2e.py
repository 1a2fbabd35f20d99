"""`mnemo import-chats` and `mnemo.rpc.chat.import.v1` against a running stack: a SillyTavern chat file (built
here in the format SillyTavern writes) becomes the conversation's messages, in file order, with the file's own
times, authors and bots; a bad line is reported with its number while the rest is imported; importing the file
again records nothing new, and importing it grown by a new message records that message alone; a text that is
no chat file is refused whole. Read back through the public contract (`mnemo.rpc.conversation.timeline.v1`)."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nats
import pytest

from mnemo.runtime.cli import main
from mnemo_client import MnemoClient
from mnemo_client.errors import MnemoError
from tests.e2e.stackproc import StackProcess

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TENANT, USER, BOT, PERSONA = "import-tenant", "u-mira", "maren", "p-mira"
T0 = datetime(2023, 6, 19, 14, 20, tzinfo=UTC)
SCENE = [
    (True, "I brought my grandmother's compass."),
    (False, "Keep it close. Its needle points at storms, not north."),
    (True, "Then which way is the storm tonight?"),
    (False, "East, over the salt flats. We fly around it."),
]


@pytest.fixture(autouse=True)
def as_operator(monkeypatch: pytest.MonkeyPatch, stack: StackProcess) -> None:
    for name, value in stack.client_env().items():  # `make test-e2e-secure`: the command connects as admin
        monkeypatch.setenv(name, value)


def chat_file(path: Path, scene: list[tuple[bool, str]]) -> list[datetime]:
    """A SillyTavern chat: its header, then one message a line, each send_date in another form ST writes; one
    line cut off (line 4). The times of the messages, in order."""
    times = [T0 + timedelta(minutes=7 * i, seconds=i) for i in range(len(scene))]
    forms = [
        lambda t: int(t.timestamp() * 1000),  # Unix milliseconds
        lambda t: f"{t.year}-{t.month}-{t.day} @{t.hour:02d}h {t.minute:02d}m {t.second:02d}s 0ms",  # humanized
        lambda t: t.isoformat(),
    ]
    header = {"user_name": "Mira", "character_name": "Maren", "create_date": "2023-6-19 @14h 19m 00s 000ms",
              "chat_metadata": {}}  # fmt: skip
    lines = [json.dumps(header)]
    for i, ((is_user, text), at) in enumerate(zip(scene, times, strict=True)):
        name = "Mira" if is_user else "Maren"
        message = {"name": name, "is_user": is_user, "is_system": False, "send_date": forms[i % 3](at), "mes": text}
        lines.append(json.dumps(message, ensure_ascii=False))
        if i == 1:
            lines.append('{"name": "Maren", "is_user": false, "mes": "a line cut off in the mid')
    path.write_text("\n".join(lines))
    return times


def import_chats(capsys: pytest.CaptureFixture[str], stack: StackProcess, path: Path) -> tuple[int, str, str]:
    argv = ["import-chats", str(path), "--tenant", TENANT, "--user", USER, "--bot", BOT, "--persona", PERSONA]
    code = main([*argv, "--conversation", "imported-1", "--nats-url", stack.nats_url])
    out, err = capsys.readouterr()
    return code, out, err


async def _timeline(stack: StackProcess, conversation: str) -> list[dict[str, Any]]:
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        body = {"tenant_id": TENANT, "user_id": USER, "conversation_id": conversation}
        msg = await nc.request("mnemo.rpc.conversation.timeline.v1", json.dumps(body).encode(), timeout=30)
    finally:
        await nc.drain()
    reply: dict[str, Any] = json.loads(msg.data)
    messages: list[dict[str, Any]] = reply.get("messages", [])
    return messages


def timeline_of(
    stack: StackProcess, count: int, timeout: float = 120, conversation: str = "imported-1"
) -> list[dict[str, Any]]:
    """The timeline once it holds ``count`` messages (events are recorded asynchronously)."""
    deadline = time.monotonic() + timeout
    messages = asyncio.run(_timeline(stack, conversation))
    while len(messages) < count and time.monotonic() < deadline:
        time.sleep(0.5)
        messages = asyncio.run(_timeline(stack, conversation))
    return messages


def test_a_chat_file_is_imported_in_order_with_its_times_once(capsys, stack: StackProcess, tmp_path: Path):
    path = tmp_path / "Maren - 2023-6-19 @14h 19m 00s 000ms.jsonl"
    times = chat_file(path, SCENE)

    code, out, err = import_chats(capsys, stack, path)
    assert code == 1, (out, err)  # one line refused: reported, the rest imported
    assert "line 4: not JSON" in err
    assert "published 4 message(s)" in out
    assert "1 line(s) refused" in out

    messages = timeline_of(stack, len(SCENE))
    assert [m["content"] for m in messages] == [text for _, text in SCENE]
    assert [datetime.fromisoformat(m["created_at"]) for m in messages] == times
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert [m["author_id"] for m in messages] == [PERSONA, BOT, PERSONA, BOT]
    assert [m["message_id"] for m in messages] == ["imported-1:L2", "imported-1:L3", "imported-1:L5", "imported-1:L6"]

    code, out, err = import_chats(capsys, stack, path)  # again: the same events, the same ids
    assert code == 1
    assert "line 4: not JSON" in err
    assert "published 4 message(s)" in out

    grown = [*SCENE, (True, "Around it, then. Wake me at the lighthouse.")]
    grown_times = chat_file(path, grown)
    code, out, err = import_chats(capsys, stack, path)
    assert "published 5 message(s)" in out, err
    # The new message comes after the re-published ones in the conversation's stream: once it is recorded,
    # everything published before it was, and nothing was recorded twice.
    messages = timeline_of(stack, len(grown))
    assert [m["content"] for m in messages] == [text for _, text in grown]
    assert [datetime.fromisoformat(m["created_at"]) for m in messages] == grown_times


def test_a_file_that_is_no_chat_is_refused_and_nothing_published(capsys, stack: StackProcess, tmp_path: Path):
    path = tmp_path / "notes.jsonl"
    path.write_text("these are my notes\n")
    code, out, err = import_chats(capsys, stack, path)
    assert code == 1
    assert "not a SillyTavern chat file" in err
    assert "published" not in out


async def _rpc_import(stack: StackProcess, **fields: Any) -> Any:
    async with await MnemoClient.connect(stack.nats_url, request_timeout=60, **stack.client_options()) as mnemo:
        return await mnemo.chat_import(tenant_id=TENANT, user_id=USER, **fields)


def test_the_chat_import_rpc_imports_a_file_once_and_refuses_what_is_no_chat(stack: StackProcess, tmp_path: Path):
    path = tmp_path / "chat.jsonl"
    times = chat_file(path, SCENE)
    fields = {"bot_id": BOT, "persona_id": PERSONA, "conversation_id": "rpc-1"}

    dry = asyncio.run(_rpc_import(stack, content=path.read_text(), dry_run=True, **fields))
    assert (dry.dry_run, dry.messages, dry.already_stored) == (True, 4, 0)

    reply = asyncio.run(_rpc_import(stack, content=path.read_text(), **fields))
    assert (reply.conversation_id, reply.format, reply.messages, reply.events) == ("rpc-1", "sillytavern", 4, 4)
    assert (reply.first_message_at, reply.last_message_at) == (times[0], times[-1])
    assert [(p.line, p.reason.split(":")[0]) for p in reply.problems] == [(4, "not JSON")]
    assert reply.problems_total == 1
    messages = timeline_of(stack, len(SCENE), conversation="rpc-1")
    assert [m["content"] for m in messages] == [text for _, text in SCENE]
    assert [m["message_id"] for m in messages] == ["rpc-1:L2", "rpc-1:L3", "rpc-1:L5", "rpc-1:L6"]
    assert [m["author_id"] for m in messages] == [PERSONA, BOT, PERSONA, BOT]

    again = asyncio.run(_rpc_import(stack, content=path.read_text(), **fields))
    assert again.messages == 4  # the same events with the same ids: ingest (or JetStream's window) drops them
    grown = [*SCENE, (False, "The lighthouse, then.")]
    chat_file(path, grown)
    assert asyncio.run(_rpc_import(stack, content=path.read_text(), **fields)).messages == 5
    messages = timeline_of(stack, len(grown), conversation="rpc-1")
    assert [m["content"] for m in messages] == [text for _, text in grown], "each message recorded once"

    for bad, why in [
        ({"content": "these are my notes"}, "not a SillyTavern chat file"),
        ({"content": path.read_text(), "timezone": "Mars/Olympus"}, "no IANA time zone"),
    ]:
        with pytest.raises(MnemoError) as refused:
            asyncio.run(_rpc_import(stack, **bad))
        assert refused.value.code == "bad_request"
        assert why in str(refused.value)


def risu_chat(path: Path, scene: list[tuple[bool, str]]) -> list[datetime]:
    """A RisuAI chat export (``exportChat`` in kwaroran/RisuAI ``src/ts/characters.ts``: ``type: risuChat``, the
    Chat with its messages, ``time`` in Unix milliseconds). The times of the messages, in order."""
    times = [T0 + timedelta(minutes=3 * i) for i in range(len(scene))]
    messages = [
        {"role": "user" if is_user else "char", "data": text, "time": int(at.timestamp() * 1000)}
        | ({} if is_user else {"saying": "c-7f2a"})
        for (is_user, text), at in zip(scene, times, strict=True)
    ]
    chat = {"message": messages, "note": "", "name": "Chat 1", "localLore": [], "fmIndex": -1, "id": "0b5e-4c1d"}
    path.write_text(json.dumps({"type": "risuChat", "ver": 2, "data": chat, "folders": []}))
    return times


def test_a_risuai_export_is_found_by_its_shape_and_imported_once(capsys, stack: StackProcess, tmp_path: Path):
    path = tmp_path / "Maren_2023-06-19_chat.json"
    times = risu_chat(path, SCENE)
    argv = ["import-chats", str(path), "--tenant", TENANT, "--user", USER, "--bot", BOT, "--persona", PERSONA,
            "--character-name", "Maren", "--conversation", "risu-1", "--nats-url", stack.nats_url]  # fmt: skip
    for _ in range(2):  # the second import publishes the same events again: nothing is recorded twice
        assert main(argv) == 0
        out, err = capsys.readouterr()
        assert "(risuai)" in out, (out, err)
        assert "published 4 message(s)" in out
    grown = [*SCENE, (True, "Wake me at the lighthouse.")]
    grown_times = risu_chat(path, grown)
    assert main(argv) == 0
    messages = timeline_of(stack, len(grown), conversation="risu-1")
    assert [m["content"] for m in messages] == [text for _, text in grown]
    assert [datetime.fromisoformat(m["created_at"]) for m in messages] == grown_times
    assert grown_times[: len(times)] == times
    assert [m["message_id"] for m in messages] == [f"risu-1:M{i}" for i in range(1, 6)]
    assert [(m["author_id"], m["author_name"]) for m in messages][:2] == [(PERSONA, "You"), (BOT, "Maren")]


def test_an_agnai_export_without_times_is_placed_from_started_at(stack: StackProcess):
    # agnaistic/agnai web/pages/Chat/ChatExport.tsx: no times; userId marks the user's messages.
    def export(scene: list[tuple[bool, str]]) -> str:
        messages = [{"handle": "Mira", "userId": "6f1c", "msg": text} if is_user else
                    {"characterId": "imported", "msg": text} for is_user, text in scene]  # fmt: skip
        return json.dumps({"name": "Exported", "greeting": "", "sampleChat": "", "scenario": "", "messages": messages})

    fields = {"bot_id": BOT, "persona_id": PERSONA, "character_name": "Maren", "conversation_id": "agnai-1"}
    with pytest.raises(MnemoError) as refused:
        asyncio.run(_rpc_import(stack, content=export(SCENE), **fields))
    assert refused.value.code == "bad_request"
    assert "started_at" in str(refused.value)
    fields["started_at"] = T0.isoformat()
    for scene in (SCENE, SCENE, [*SCENE, (False, "The lighthouse, then.")]):
        reply = asyncio.run(_rpc_import(stack, content=export(scene), **fields))
        assert (reply.format, reply.messages) == ("agnai", len(scene))
    messages = timeline_of(stack, len(SCENE) + 1, conversation="agnai-1")
    assert [m["content"] for m in messages] == [text for _, text in SCENE] + ["The lighthouse, then."]
    expected = [T0 + timedelta(seconds=i) for i in range(len(SCENE) + 1)]
    assert [datetime.fromisoformat(m["created_at"]) for m in messages] == expected
    assert [m["author_name"] for m in messages][:2] == ["Mira", "Maren"]
