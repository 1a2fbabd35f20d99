"""``mnemo.rpc.chat.import.v1`` without NATS: what a request refuses before publishing, and the reply's counts."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from mnemo.services.memory.chat_import.rpc import ChatImportRefused, ChatImports, ChatImportUnavailable, read_request
from mnemo_client.wire.chat_import_contract import MAX_PROBLEMS, ChatImportRequest

HEADER = {"user_name": "Mira", "character_name": "Maren", "create_date": "2024-5-12 @14h 33m 22s 123ms"}


def chat(*lines: dict[str, object] | str) -> str:
    return "\n".join([json.dumps(HEADER), *(x if isinstance(x, str) else json.dumps(x) for x in lines)])


def message(text: str, at: str = "2024-5-12 @14h 33m 40s 5ms", **extra: object) -> dict[str, object]:
    return {"name": "Maren", "is_user": False, "send_date": at, "mes": text, **extra}


def request(content: str, **fields: object) -> ChatImportRequest:
    return ChatImportRequest.model_validate({"tenant_id": "t1", "user_id": "u1", "content": content, **fields})


def test_a_dry_run_reads_the_file_and_counts_what_would_be_published() -> None:
    content = chat(
        message("Keep it close.", swipes=["Keep it close.", "Hm."]),
        message("hidden", is_system=True),
        "{not json",
        message("Fly east.", at="2024-5-12 @15h 00m 00s 0ms"),
    )
    reply = asyncio.run(ChatImports(None).handle(request(content, dry_run=True, bot_id="maren", timezone="Asia/Tokyo")))
    assert (reply.dry_run, reply.messages, reply.events, reply.already_stored) == (True, 2, 2, 0)
    assert reply.first_message_at == datetime(2024, 5, 12, 5, 33, 40, 5000, UTC)  # 14:33 in Tokyo
    assert reply.last_message_at == datetime(2024, 5, 12, 6, 0, tzinfo=UTC)
    assert reply.skipped == {"hidden": 1, "swipe alternatives": 1}
    assert [(p.line, p.reason.startswith("not JSON")) for p in reply.problems] == [(4, True)]
    assert reply.conversation_id.startswith("st-")


def test_without_nats_an_import_is_unavailable_never_a_silent_success() -> None:
    with pytest.raises(ChatImportUnavailable, match="no NATS connection"):
        asyncio.run(ChatImports(None).handle(request(chat(message("Hello.")))))


@pytest.mark.parametrize(
    ("content", "fields", "why"),
    [
        ("these are my notes", {}, "not a SillyTavern chat file"),
        ("[1, 2]", {}, "not a SillyTavern chat header"),
        (chat(message("Hi.")), {"timezone": "Mars/Olympus"}, "no IANA time zone"),
        ("\n \n", {}, "the file is empty"),
    ],
)
def test_what_no_import_could_fix_is_refused_before_anything_is_published(
    content: str, fields: dict[str, object], why: str
) -> None:
    with pytest.raises(ChatImportRefused, match=why):
        read_request(request(content, **fields))


def test_the_reply_lists_the_first_problems_and_counts_them_all() -> None:
    content = chat(*["{broken"] * (MAX_PROBLEMS + 5), message("Hello."))
    reply = asyncio.run(ChatImports(None).handle(request(content, dry_run=True)))
    assert (len(reply.problems), reply.problems_total, reply.messages) == (MAX_PROBLEMS, MAX_PROBLEMS + 5, 1)


def test_the_request_refuses_an_unknown_format_and_an_empty_file() -> None:
    with pytest.raises(ValidationError):
        request(chat(message("Hi.")), format="csv")
    with pytest.raises(ValidationError):
        request("")


def test_a_json_export_is_found_by_its_shape_and_a_timeless_one_needs_started_at() -> None:
    # agnaistic/agnai web/pages/Chat/ChatExport.tsx
    agnai = json.dumps({"name": "Exported", "greeting": "", "sampleChat": "", "scenario": "", "messages": [
        {"handle": "Mira", "userId": "6f1c", "msg": "Hello."}, {"characterId": "imported", "msg": "Welcome."}]})  # fmt: skip
    with pytest.raises(ChatImportRefused, match="started_at"):
        read_request(request(agnai))
    fields = {"dry_run": True, "started_at": "2024-05-12T14:00:00", "timezone": "Asia/Tokyo", "character_name": "Maren"}
    reply = asyncio.run(ChatImports(None).handle(request(agnai, **fields)))
    assert (reply.format, reply.messages, reply.problems) == ("agnai", 2, [])
    assert reply.first_message_at == datetime(2024, 5, 12, 5, 0, tzinfo=UTC)  # 14:00 in Tokyo
    assert reply.last_message_at == datetime(2024, 5, 12, 5, 0, 1, tzinfo=UTC)  # a second later
    assert reply.conversation_id.startswith("agnai-")
    with pytest.raises(ChatImportRefused, match="not a chat export of format risuai"):
        read_request(request("[]", format="risuai"))


def test_an_old_client_naming_sillytavern_still_imports_its_file() -> None:
    # Before `auto`, the v1 request's format was `sillytavern` alone, and clients sent it.
    reply = asyncio.run(ChatImports(None).handle(request(chat(message("Hi.")), format="sillytavern", dry_run=True)))
    assert (reply.format, reply.messages) == ("sillytavern", 1)
    with pytest.raises(ChatImportRefused, match="not a SillyTavern chat"):
        read_request(request(json.dumps({"messages": []}), format="sillytavern"))
