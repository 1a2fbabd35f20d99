"""Reading SillyTavern chat files (``mnemo.services.memory.chat_import.formats``) and the events they become
(``mnemo.services.memory.chat_import.plan``), on files built here in the format SillyTavern writes (``src/endpoints/chats.js``:
a header line, then one JSON message per line)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from mnemo.runtime.cli import main
from mnemo.runtime.servers import free_port
from mnemo.services.memory.chat_import.formats import ChatFormatError, parse_sillytavern, parse_time
from mnemo.services.memory.chat_import.plan import ImportTarget, bot_id_for, conversation_id_of, plan_import
from mnemo_client.wire.contract import BotUpserted, MessageCreated, PersonaUpserted

HEADER = {"user_name": "Mira", "character_name": "Maren", "create_date": "2024-5-12 @14h 33m 22s 123ms",
          "chat_metadata": {"integrity": "5f0c", "note_prompt": ""}}  # fmt: skip
TARGET = ImportTarget(tenant_id="t1", user_id="u1")


def st_message(name: str, text: str, send_date: Any, *, is_user: bool = False, **extra: Any) -> dict[str, Any]:
    return {"name": name, "is_user": is_user, "is_system": False, "send_date": send_date, "mes": text, **extra}


def st_file(*messages: dict[str, Any] | str, header: dict[str, Any] = HEADER) -> list[str]:
    """The lines of a chat file: a string stands for a line as it is (a broken one)."""
    return [json.dumps(header), *(m if isinstance(m, str) else json.dumps(m) for m in messages)]


def test_a_chat_becomes_its_messages_in_file_order_with_roles_and_times() -> None:
    lines = st_file(
        st_message("Mira", "I brought my grandmother's compass.", "2024-5-12 @14h 33m 40s 5ms", is_user=True),
        st_message("Maren", "Keep it close.", "May 12, 2024 2:34pm", swipes=["Keep it close.", "Hm."], swipe_id=0),
        st_message("Narrator", "A storm gathers.", 1715524500000, extra={"type": "narrator"}),
        st_message("Mira", "Is it safe?", "2024-05-12T14:36:00+02:00", is_user=True),
    )
    chat = parse_sillytavern(lines)
    assert chat.problems == []
    assert (chat.header.user_name, chat.header.character_name) == ("Mira", "Maren")
    assert [(m.line, m.name, m.role) for m in chat.messages] == [
        (2, "Mira", "user"), (3, "Maren", "assistant"), (4, "Narrator", "narrator"), (5, "Mira", "user"),
    ]  # fmt: skip
    assert [m.sent_at for m in chat.messages] == [
        datetime(2024, 5, 12, 14, 33, 40, 5000, UTC),
        datetime(2024, 5, 12, 14, 34, tzinfo=UTC),
        datetime(2024, 5, 12, 14, 35, tzinfo=UTC),
        datetime(2024, 5, 12, 14, 36, tzinfo=timezone(timedelta(hours=2))),
    ]
    assert chat.messages[1].alternatives == 1  # the other swipe is counted, not imported


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1715524500000, datetime(2024, 5, 12, 14, 35, tzinfo=UTC)),
        ("1715524500000", datetime(2024, 5, 12, 14, 35, tzinfo=UTC)),
        ("2024-6-5 @14h 56m 50s 682ms", datetime(2024, 6, 5, 14, 56, 50, 682000, UTC)),
        ("2024-07-12@01h31m37s123ms", datetime(2024, 7, 12, 1, 31, 37, 123000, UTC)),
        ("2024-7-12@01h31m37s", datetime(2024, 7, 12, 1, 31, 37, tzinfo=UTC)),
        ("June 19, 2023 2:20pm", datetime(2023, 6, 19, 14, 20, tzinfo=UTC)),
        ("June 19, 2023 12:05am", datetime(2023, 6, 19, 0, 5, tzinfo=UTC)),
        ("2023-06-19T14:20:00Z", datetime(2023, 6, 19, 14, 20, tzinfo=UTC)),
    ],
)
def test_every_send_date_form_sillytavern_writes_is_read(value: Any, expected: datetime) -> None:
    assert parse_time(value) == expected


def test_a_time_without_a_zone_is_read_in_the_zone_given() -> None:
    paris = ZoneInfo("Europe/Paris")
    assert parse_time("June 19, 2023 2:20pm", paris) == datetime(2023, 6, 19, 14, 20, tzinfo=paris)
    assert parse_time("2023-06-19T14:20:00Z", paris) == datetime(2023, 6, 19, 14, 20, tzinfo=UTC)  # has its own
    assert parse_time(1715524500000, paris) == datetime(2024, 5, 12, 14, 35, tzinfo=UTC)  # a Unix time is absolute


@pytest.mark.parametrize("value", [None, "", "yesterday", "2024-13-45 @99h 1m 1s", True, [2024], -5, 1e20])
def test_what_is_no_time_is_refused(value: Any) -> None:
    with pytest.raises(ValueError, match=r"time|range|month"):
        parse_time(value)


def test_bad_lines_are_reported_with_their_numbers_and_the_rest_is_read() -> None:
    lines = st_file(
        st_message("Mira", "first", 1715524500000, is_user=True),
        '{"name": "Maren", "mes": "cut off in the midd',
        st_message("Maren", "no time", "someday"),
        json.dumps(["not", "an", "object"]),
        {"is_user": True, "mes": "nameless", "send_date": 1715524500000},
        st_message("Maren", None, 1715524500000),
        st_message("Mira", "is_user is text", 1715524500000, is_user="yes"),
        "",
        st_message("Maren", "last", 1715524560000),
    )
    chat = parse_sillytavern(lines)
    assert [m.text for m in chat.messages] == ["first", "last"]
    assert [m.line for m in chat.messages] == [2, 10]  # the blank line 9 still counts
    reasons = {p.line: p.reason for p in chat.problems}
    assert sorted(reasons) == [3, 4, 5, 6, 7, 8]
    assert reasons[3].startswith("not JSON")
    assert "send_date" in reasons[4]
    assert "someday" in reasons[4]
    assert "object" in reasons[5]
    assert "name" in reasons[6]
    assert "mes" in reasons[7]
    assert "is_user" in reasons[8]


def test_hidden_and_empty_messages_are_skipped_and_counted() -> None:
    hidden = st_message("Maren", "an aside the model never saw", 1715524500000) | {"is_system": True}
    image_only = st_message("Mira", "", 1715524500000, is_user=True, extra={"image": "/img/a.png"})
    lines = st_file(hidden, image_only, st_message("Maren", "shown", 1715524500000))
    chat = parse_sillytavern(lines)
    assert ([m.text for m in chat.messages], dict(chat.skipped)) == (["shown"], {"hidden": 1, "empty": 1})
    with_hidden = parse_sillytavern(lines, include_hidden=True)
    assert [m.text for m in with_hidden.messages] == ["an aside the model never saw", "shown"]


@pytest.mark.parametrize("first", ["", "not json", json.dumps([1]), json.dumps({"title": "my notes"})])
def test_a_file_without_a_chat_header_is_refused_whole(first: str) -> None:
    with pytest.raises(ChatFormatError):
        parse_sillytavern([first] if first else [])


def test_a_group_chat_without_a_header_starts_with_its_first_message() -> None:
    # Group chats written before SillyTavern 1.15 have no header line; Chub's chats wrap `mes` in an object.
    lines = [json.dumps(st_message("Mira", "hello both", 1715524500000, is_user=True)),
             json.dumps(st_message("Rowan", {"message": "hi"}, 1715524510000))]  # fmt: skip
    chat = parse_sillytavern(lines)
    assert [(m.line, m.text) for m in chat.messages] == [(1, "hello both"), (2, "hi")]
    assert chat.header.user_name == ""
    assert chat.problems == []
    assert conversation_id_of(chat) == conversation_id_of(parse_sillytavern(lines))


def test_events_carry_the_files_times_ids_and_authors() -> None:
    lines = st_file(
        st_message("Mira", "hello", 1715524500000, is_user=True),
        st_message("Maren", "welcome aboard", 1715524560000),
    )
    target = ImportTarget(tenant_id="t1", user_id="u1", bot_id="maren", persona_id="p-mira")
    plan = plan_import(parse_sillytavern(lines), target)
    assert plan.problems == []
    user, bot = plan.events
    assert isinstance(user, MessageCreated)
    assert isinstance(bot, MessageCreated)
    assert plan.conversation_id.startswith("st-")
    assert (user.message_id, bot.message_id) == (f"{plan.conversation_id}:L2", f"{plan.conversation_id}:L3")
    assert (user.role, user.author_id, user.author_name, user.persona_id) == ("user", "p-mira", "Mira", "p-mira")
    assert (bot.role, bot.author_id, bot.author_name, bot.bot_ids) == ("assistant", "maren", "Maren", ["maren"])
    assert (user.created_at, bot.created_at) == (
        datetime(2024, 5, 12, 14, 35, tzinfo=UTC), datetime(2024, 5, 12, 14, 36, tzinfo=UTC)
    )  # fmt: skip


def test_ids_are_the_same_on_every_import_and_for_the_chat_grown_by_new_messages() -> None:
    lines = st_file(st_message("Mira", "hello", 1715524500000, is_user=True))
    grown = [*lines, json.dumps(st_message("Maren", "later", 1715524560000))]
    once, again, longer = (plan_import(parse_sillytavern(f), TARGET) for f in (lines, lines, grown))
    assert once.events == again.events
    assert longer.events[: len(once.events)] == once.events
    other_chat = st_file(
        st_message("Mira", "hello", 1715524500000, is_user=True), header={**HEADER, "create_date": "x"}
    )
    assert plan_import(parse_sillytavern(other_chat), TARGET).conversation_id != once.conversation_id
    named = plan_import(parse_sillytavern(lines), ImportTarget(tenant_id="t1", user_id="u1", conversation_id="c9"))
    assert [e.message_id for e in named.events if isinstance(e, MessageCreated)] == ["c9:L2"]


def test_a_header_without_a_creation_date_is_told_apart_by_its_first_message() -> None:
    bare = {"user_name": "Mira", "character_name": "Maren"}
    one = parse_sillytavern(st_file(st_message("Mira", "a", 1715524500000, is_user=True), header=bare))
    two = parse_sillytavern(st_file(st_message("Mira", "b", 1715524500000, is_user=True), header=bare))
    assert conversation_id_of(one) != conversation_id_of(two)


def test_a_group_chat_maps_each_character_to_its_bot() -> None:
    lines = st_file(
        st_message("Mira", "hello both", 1715524500000, is_user=True),
        st_message("Rowan", "hi", 1715524510000),
        st_message("Wren Ash", "greetings", 1715524520000),
        header={"user_name": "Mira", "character_name": "", "create_date": "2024-5-12@14h33m22s"},
    )
    target = ImportTarget(tenant_id="t1", user_id="u1", bots={"Rowan": "rowan-7"})
    events = plan_import(parse_sillytavern(lines), target).events
    assert [e.author_id for e in events if isinstance(e, MessageCreated)] == [None, "rowan-7", "st-wren-ash"]
    assert {tuple(e.bot_ids) for e in events if isinstance(e, MessageCreated)} == {("rowan-7", "st-wren-ash")}
    assert bot_id_for("Ærø", TARGET).startswith("st-")
    assert bot_id_for("!!", TARGET).startswith("st-")


def test_profiles_are_published_only_when_asked_with_the_chats_first_time() -> None:
    lines = st_file(st_message("Mira", "hi", 1715524500000, is_user=True), st_message("Maren", "yo", 1715524560000))
    assert all(isinstance(e, MessageCreated) for e in plan_import(parse_sillytavern(lines), TARGET).events)
    target = ImportTarget(tenant_id="t1", user_id="u1", persona_id="p-mira", with_profiles=True)
    bot, persona, *messages = plan_import(parse_sillytavern(lines), target).events
    assert isinstance(bot, BotUpserted)
    assert isinstance(persona, PersonaUpserted)
    assert len(messages) == 2
    assert (bot.bot_id, bot.name, bot.updated_at) == ("st-maren", "Maren", datetime(2024, 5, 12, 14, 35, tzinfo=UTC))
    assert (persona.persona_id, persona.name) == ("p-mira", "Mira")


def test_a_message_the_contract_refuses_is_reported_at_its_line() -> None:
    lines = st_file(
        st_message("Mira", "x" * 200_001, 1715524500000, is_user=True), st_message("Maren", "ok", 1715524560000)
    )
    plan = plan_import(parse_sillytavern(lines), TARGET)
    assert [p.line for p in plan.problems] == [2]
    assert "content" in plan.problems[0].reason
    assert [e.content for e in plan.events if isinstance(e, MessageCreated)] == ["ok"]


def test_a_conversation_id_too_long_for_the_message_ids_is_refused() -> None:
    chat = parse_sillytavern(st_file(st_message("Mira", "hi", 1715524500000, is_user=True)))
    with pytest.raises(ValueError, match="at most"):
        plan_import(chat, ImportTarget(tenant_id="t1", user_id="u1", conversation_id="c" * 201))


def test_the_command_against_an_unreachable_nats_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chat = tmp_path / "chat.jsonl"
    chat.write_text("\n".join(st_file(st_message("Mira", "hello", 1715524500000, is_user=True))))
    nowhere = f"nats://127.0.0.1:{free_port()}"  # nothing listens there
    code = main(["import-chats", str(chat), "--tenant", "t1", "--user", "u1", "--nats-url", nowhere])
    assert code == 1
    assert f"cannot connect to NATS at {nowhere}" in capsys.readouterr().err
