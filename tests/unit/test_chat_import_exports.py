"""Reading other platforms' chat exports (``mnemo.services.memory.chat_import.exports`` and ``detect``), on samples
built here in the shapes their exporters write (the source of each is named beside it and in docs/import.md)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from mnemo.runtime.cli import main
from mnemo.services.memory.chat_import.detect import detect_format, parse_chat
from mnemo.services.memory.chat_import.exports import fill_times
from mnemo.services.memory.chat_import.formats import ChatFormatError
from mnemo.services.memory.chat_import.plan import ImportTarget, plan_import
from mnemo_client.wire.contract import MessageCreated

START = datetime(2024, 5, 12, 14, 0, tzinfo=UTC)
TARGET = ImportTarget(tenant_id="t1", user_id="u1", bot_id="maren", persona_id="p-mira")

# agnaistic/agnai web/pages/Chat/ChatExport.tsx: JSON.stringify drops the keys left undefined.
AGNAI = {
    "name": "Exported",
    "greeting": "The lighthouse keeper looks up.",
    "sampleChat": "",
    "scenario": "",
    "messages": [
        {"characterId": "imported", "msg": "The lighthouse keeper looks up."},
        {"handle": "Mira", "userId": "6f1c", "msg": "I brought my grandmother's compass."},
        {"characterId": "imported", "msg": "Keep it close.", "state": "retried"},
    ],
}
# kwaroran/RisuAI src/ts/characters.ts exportChat (mode 0) around a Chat of src/ts/storage/database.svelte.ts.
RISU = {
    "type": "risuChat",
    "ver": 2,
    "data": {
        "message": [
            {"role": "user", "data": "I brought my grandmother's compass.", "time": 1715524500000},
            {"role": "char", "data": "Keep it close.", "saying": "c-7f2a", "time": 1715524560000,
             "generationInfo": {"model": "gpt-4o", "inputTokens": 812}},
            {"role": "char", "data": "(an aside)", "saying": "c-7f2a", "time": 1715524570000, "disabled": True},
            {"role": "user", "data": "Is it safe?"},
        ],
        "note": "", "name": "Chat 1", "localLore": [], "fmIndex": -1, "id": "0b5e-4c1d", "folderId": None,
    },
    "folders": [],
}  # fmt: skip
# oobabooga/text-generation-webui modules/chat.py: start_new_chat, update_message_metadata, add_message_version.
OOBA = {
    "internal": [
        ["<|BEGIN-VISIBLE-CHAT|>", "The lighthouse keeper looks up."],
        ["I brought my grandmother's compass.", "Keep it close."],
    ],
    "visible": [
        ["", "The lighthouse keeper looks up."],
        ["I brought my grandmother&#x27;s compass.", "Keep it close."],
    ],
    "metadata": {
        "assistant_0": {"timestamp": "Jan 05, 2025 14:03"},
        "user_1": {"timestamp": "Jan 05, 2025 14:04"},
        "assistant_1": {
            "timestamp": "Jan 05, 2025 14:04",
            "versions": [
                {"content": "Hm.", "visible_content": "Hm.", "timestamp": "Jan 05, 2025 14:04"},
                {"content": "Keep it close.", "visible_content": "Keep it close.", "timestamp": "Jan 05, 2025 14:05"},
            ],
            "current_version_index": 1,
        },
    },
}
# irsat000/CAI-Tools scripts/content.js DownloadConversation_Oobabooga: a Character.AI chat, all four keys alike.
_CAI_PAIRS = [["Hello there.", "Greetings, traveller."], ["Where am I?", "At the edge of the map."]]
CAI_OOBA = {"internal": _CAI_PAIRS, "visible": _CAI_PAIRS, "data": _CAI_PAIRS, "data_visible": _CAI_PAIRS}


def text(document: Any) -> str:
    return json.dumps(document, indent=2)


@pytest.mark.parametrize(
    ("document", "fmt"),
    [(AGNAI, "agnai"), (RISU, "risuai"), (OOBA, "oobabooga"), (CAI_OOBA, "oobabooga"),
     ({"user_name": "Mira", "character_name": "Maren", "chat_metadata": {}}, "sillytavern"), (None, "sillytavern")],
)  # fmt: skip
def test_each_format_is_told_apart_by_its_shape(document: Any, fmt: str) -> None:
    assert detect_format(document) == fmt


def test_an_agnai_export_has_no_times_so_they_count_from_started_at() -> None:
    chat = parse_chat(text(AGNAI), started_at=START, character_name="Maren")
    assert (chat.format, chat.problems) == ("agnai", [])
    assert [(m.line, m.name, m.role, m.text) for m in chat.messages] == [
        (1, "Maren", "assistant", "The lighthouse keeper looks up."),
        (2, "Mira", "user", "I brought my grandmother's compass."),
        (3, "Maren", "assistant", "Keep it close."),
    ]
    assert [m.sent_at for m in chat.messages] == [START + timedelta(seconds=s) for s in (0, 1, 2)]
    with pytest.raises(ValueError, match="started_at"):
        parse_chat(text(AGNAI))


def test_a_risuai_export_keeps_its_times_and_leaves_disabled_messages_out() -> None:
    chat = parse_chat(text(RISU), character_name="Maren")
    assert (chat.format, chat.problems, dict(chat.skipped)) == ("risuai", [], {"hidden": 1})
    assert [(m.line, m.name, m.role) for m in chat.messages] == [
        (1, "You", "user"), (2, "Maren", "assistant"), (4, "You", "user"),
    ]  # fmt: skip
    at = datetime(2024, 5, 12, 14, 35, tzinfo=UTC)
    # the last has no `time` (messages older than the field): a second after the one before it
    assert [m.sent_at for m in chat.messages] == [at, at + timedelta(minutes=1), at + timedelta(seconds=71)]
    assert len(parse_chat(text(RISU), include_hidden=True).messages) == 4


def test_a_risuai_export_of_every_chat_is_read_when_it_holds_one() -> None:
    one = {"type": "risuAllChats", "ver": 2, "data": [RISU["data"]], "folders": []}
    assert len(parse_chat(text(one)).messages) == 3
    with pytest.raises(ChatFormatError, match="2 chats"):
        parse_chat(text({**one, "data": [RISU["data"], RISU["data"]]}))


def test_a_text_generation_webui_history_reads_internal_with_its_local_times_and_versions() -> None:
    paris = ZoneInfo("Europe/Paris")
    chat = parse_chat(text(OOBA), zone=paris, character_name="Maren")
    assert (chat.format, chat.problems) == ("oobabooga", [])
    assert [(m.line, m.name, m.role, m.text) for m in chat.messages] == [
        (2, "Maren", "assistant", "The lighthouse keeper looks up."),
        (3, "You", "user", "I brought my grandmother's compass."),  # internal: the text, not its HTML
        (4, "Maren", "assistant", "Keep it close."),
    ]
    assert chat.messages[0].sent_at == datetime(2025, 1, 5, 14, 3, tzinfo=paris)
    assert chat.messages[2].alternatives == 1


def test_a_cai_tools_export_without_times_needs_started_at() -> None:
    with pytest.raises(ValueError, match="no times"):
        parse_chat(text(CAI_OOBA))
    chat = parse_chat(text(CAI_OOBA), started_at=START.replace(tzinfo=None), zone=ZoneInfo("Asia/Tokyo"))
    assert [m.role for m in chat.messages] == ["user", "assistant", "user", "assistant"]
    assert chat.messages[0].sent_at == datetime(2024, 5, 12, 5, 0, tzinfo=UTC)  # 14:00 in Tokyo


def test_bad_messages_are_reported_with_their_field_and_the_rest_is_read() -> None:
    agnai = {**AGNAI, "messages": [AGNAI["messages"][0], {"userId": "6f1c"}, "text", {"msg": 5}]}
    chat = parse_chat(text(agnai), started_at=START)
    assert [(p.line, p.reason) for p in chat.problems] == [
        (2, "messages[1].msg: missing"),
        (3, "messages[2]: a message is a JSON object, not str"),
        (4, "messages[3].msg: a int, not text"),
    ]
    assert len(chat.messages) == 1
    data = RISU["data"]
    assert isinstance(data, dict)
    risu = {**RISU, "data": {**data, "message": [{"role": "bot", "data": "x"}, {"role": "user", "data": "y",
                                                                                  "time": "soon"}]}}  # fmt: skip
    reasons = [p.reason for p in parse_chat(text(risu), started_at=START).problems]
    assert reasons[0] == "data.message[0].role: 'bot', not user or char"
    assert reasons[1].startswith("data.message[1].time: not a time")
    ooba = {"internal": [["hi", "hello"], "broken", ["ok", None]], "visible": []}
    problems = parse_chat(text(ooba), started_at=START).problems
    assert [(p.line, p.reason) for p in problems] == [(3, "internal[1]: a row is [user, character]"),
                                                      (6, "internal[2][1]: missing")]  # fmt: skip


@pytest.mark.parametrize(
    ("content", "fmt", "message"),
    [
        ("[1, 2]", "agnai", "not a chat export of format agnai: the file is a JSON list"),
        ('{"type": "risuChat", "ver": 2, "data": {}}', "auto", "data.message is no list"),
        ('{"messages": 3}', "agnai", "no messages list"),
        ("{}", "oobabooga", "no internal"),
        ("{}", "csv", "unknown format"),
    ],
)
def test_a_file_that_is_no_export_of_its_format_is_refused_whole(content: str, fmt: str, message: str) -> None:
    with pytest.raises(ChatFormatError, match=message):
        parse_chat(content, fmt)


def test_missing_times_are_filled_deterministically_from_the_nearest_known_one() -> None:
    t = START
    assert fill_times([None, None, t, None], None, "x") == [t - timedelta(seconds=2), t - timedelta(seconds=1), t,
                                                             t + timedelta(seconds=1)]  # fmt: skip
    assert fill_times([None, t], START - timedelta(hours=1), "x")[0] == START - timedelta(hours=1)
    assert fill_times([], None, "x") == []


@pytest.mark.parametrize("document", [AGNAI, RISU, OOBA, CAI_OOBA])
def test_the_same_export_gives_the_same_events_and_grown_it_adds_only_new_ones(document: dict[str, Any]) -> None:
    def plan(doc: dict[str, Any]) -> list[MessageCreated]:
        events = plan_import(parse_chat(text(doc), started_at=START), TARGET).events
        return [e for e in events if isinstance(e, MessageCreated)]

    once, again = plan(document), plan(document)
    assert once == again
    assert len({e.message_id for e in once}) == len(once)
    key = "messages" if "messages" in document else "internal" if "internal" in document else None
    if key is None:
        data = document["data"]
        grown: dict[str, Any] = {**document, "data": {**data, "message": [*data["message"], {"role": "user",
                                                                                               "data": "more"}]}}  # fmt: skip
    elif key == "messages":
        grown = {**document, "messages": [*document["messages"], {"userId": "6f1c", "msg": "more"}]}
    else:
        grown = {**document, "internal": [*document["internal"], ["more", "and more"]]}
    longer = plan(grown)
    assert longer[: len(once)] == once
    assert len(longer) > len(once)
    assert once[0].conversation_id.split("-")[0] in ("agnai", "risu", "ooba")
    assert once[0].message_id.startswith(f"{once[0].conversation_id}:M")


def test_the_command_reads_each_format_and_says_what_a_timeless_file_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agnai, ooba = tmp_path / "chat-64f1.json", tmp_path / "20250105-14-03-00.json"
    agnai.write_text(text(AGNAI))
    ooba.write_text(text({**OOBA, "internal": [*OOBA["internal"], ["one more", 7]]}))  # type: ignore[list-item]
    base = ["import-chats", "--tenant", "t1", "--user", "u1", "--dry-run"]
    assert main([*base, str(agnai)]) == 1
    assert "has no times: give started_at (--started-at)" in capsys.readouterr().err
    assert main([*base, str(agnai), "--started-at", "2024-05-12T14:00:00Z", "--character-name", "Maren"]) == 0
    assert "(agnai): conversation agnai-" in capsys.readouterr().out
    assert main([*base, str(ooba)]) == 1  # a bad message is reported and the rest read
    out, err = capsys.readouterr()
    assert "message 6: internal[2][1]: a int, not text" in err
    assert "would publish 4 message(s)" in out
    assert main([*base, str(agnai), "--format", "risuai"]) == 1
    assert "not a RisuAI chat export" in capsys.readouterr().err
    assert main([*base, str(agnai), "--started-at", "noon"]) == 2
