"""Reading an existing chat history: SillyTavern's chat files (JSONL), pure (no I/O, no contract).

The format, as SillyTavern writes and reads it (``src/endpoints/chats.js`` of SillyTavern/SillyTavern: ``/save``
writes ``chat.map(JSON.stringify).join('\\n')``; ``/get`` parses each line): the first line is the chat's header,
``{"user_name", "character_name", "create_date", "chat_metadata"}``; every later line is one message,
``{"name", "is_user", "is_system", "send_date", "mes", "swipes", "swipe_id", "swipe_info", "extra"}``. ``mes``
is the text shown, the current swipe; ``is_system`` marks a message hidden from the model; ``extra.type`` is
``narrator`` for a narrator's line. ``send_date`` comes in every form SillyTavern has written over the years
(``timestampToMoment`` in its ``public/scripts/utils.js`` reads the same set): a Unix time in milliseconds (a
number, or a string of digits), ISO 8601, ``June 19, 2023 2:20pm``, and the "humanized" ``2024-6-5 @14h 56m
50s 682ms`` and ``2024-07-12@01h31m37s123ms``. A time without a zone is read in the zone the caller gives.

A line that is not a message is reported with its number and why; the rest of the file is still read.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

Role = Literal["user", "assistant", "narrator"]
_MONTHS = {
    m: i
    for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1)
}
_MERIDIEM = re.compile(r"([A-Za-z]+)\s(\d{1,2}),\s(\d{4})\s(\d{1,2}):(\d{1,2})\s?(am|pm)", re.IGNORECASE)
_HUMANIZED = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2}) ?@(\d{1,2})h ?(\d{1,2})m ?(\d{1,2})s(?: ?(\d{1,3})ms)?")


class ChatFormatError(ValueError):
    """The file is not a chat history this reader knows (its header is missing or unreadable)."""


@dataclass(frozen=True)
class ChatHeader:
    user_name: str
    character_name: str
    create_date: str


@dataclass(frozen=True)
class ExportedMessage:
    """One message of the history, as the file has it."""

    line: int  # 1-based line number in the file
    name: str
    role: Role
    text: str
    sent_at: datetime  # aware
    alternatives: int  # swipes besides the current one (not imported)


@dataclass(frozen=True)
class LineProblem:
    line: int
    reason: str


@dataclass
class ParsedChat:
    header: ChatHeader
    messages: list[ExportedMessage] = field(default_factory=list)
    problems: list[LineProblem] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)  # why lines were left out on purpose: hidden, empty
    format: str = "sillytavern"
    # What tells this chat apart from others when the file has no SillyTavern header (a JSON export): hashed
    # into the conversation id, so it must not change when the chat grows.
    identity: str | None = None
    unit: Literal["line", "message"] = "line"  # what ExportedMessage.line and LineProblem.line count


def zone_of(name: str) -> ZoneInfo:
    """The IANA zone ``name``; ``ValueError`` saying so when it is none."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{name!r} is no IANA time zone (e.g. UTC, Europe/Paris)") from None


def parse_time(value: Any, zone: tzinfo = UTC) -> datetime:
    """A SillyTavern ``send_date`` (or ``create_date``) as an aware datetime; ``ValueError`` when it is none of
    the forms in the module docstring. A time without a zone is taken in ``zone``."""
    if isinstance(value, bool) or value is None or value == "":
        raise ValueError(f"no time: {value!r}")
    if isinstance(value, int | float) or (isinstance(value, str) and value.strip().isdigit()):
        millis = float(value)
        if not 0 <= millis < 253_402_300_800_000:  # before 10000-01-01
            raise ValueError(f"a Unix time out of range: {value!r}")
        return datetime.fromtimestamp(millis / 1000, UTC)
    if not isinstance(value, str):
        raise ValueError(f"a time is a number or a string, not {type(value).__name__}")
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        parsed = _named_forms(text)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=zone)


def _named_forms(text: str) -> datetime:
    if match := _HUMANIZED.fullmatch(text):
        year, month, day, hour, minute, second, ms = match.groups()
        parts = (int(year), int(month), int(day), int(hour), int(minute), int(second))
        return datetime(*parts, int(ms or 0) * 1000)
    if match := _MERIDIEM.fullmatch(text):
        month_name, day, year, hour, minute, meridiem = match.groups()
        month = _MONTHS.get(month_name[:3].lower())
        if month is None:
            raise ValueError(f"unknown month {month_name!r} in {text!r}")
        hour24 = int(hour) % 12 + (12 if meridiem.lower() == "pm" else 0)
        return datetime(int(year), month, int(day), hour24, int(minute))
    raise ValueError(f"not a time SillyTavern writes: {text!r}")


def _header(line: str) -> ChatHeader | None:
    """The header of the first line; None when it is a message (a group chat written before SillyTavern 1.15
    has no header)."""
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise ChatFormatError(f"line 1 is not JSON ({exc}): not a SillyTavern chat file") from None
    if isinstance(data, dict) and "mes" in data and "name" in data:
        return None
    if not isinstance(data, dict) or not ({"user_name", "character_name", "chat_metadata"} & set(data)):
        raise ChatFormatError(
            "line 1 is not a SillyTavern chat header (an object with user_name, character_name, create_date)"
        )
    return ChatHeader(
        user_name=str(data.get("user_name") or ""),
        character_name=str(data.get("character_name") or ""),
        create_date=str(data.get("create_date") or ""),
    )


def _role(data: dict[str, Any]) -> Role:
    extra = data.get("extra")
    if isinstance(extra, dict) and extra.get("type") == "narrator":
        return "narrator"
    return "user" if data.get("is_user") is True else "assistant"


def _message(number: int, data: Any, zone: tzinfo) -> ExportedMessage:
    if not isinstance(data, dict):
        raise ValueError(f"a message is a JSON object, not {type(data).__name__}")
    name, text = data.get("name"), data.get("mes")
    if isinstance(text, dict) and isinstance(text.get("message"), str):
        text = text["message"]  # Chub's chats, which SillyTavern flattens the same way on import
    if not isinstance(name, str) or not name.strip():
        raise ValueError("no name (who wrote it)")
    if not isinstance(text, str):
        raise ValueError("no mes (its text)" if text is None else f"mes is a {type(text).__name__}, not text")
    if "is_user" in data and not isinstance(data["is_user"], bool):
        raise ValueError(f"is_user is {data['is_user']!r}, not true or false")
    try:
        sent_at = parse_time(data.get("send_date"), zone)
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"send_date: {exc}") from None
    swipes = data.get("swipes")
    alternatives = max(len(swipes) - 1, 0) if isinstance(swipes, list) else 0
    return ExportedMessage(number, name, _role(data), text, sent_at, alternatives)


def parse_sillytavern(lines: Iterable[str], zone: tzinfo = UTC, *, include_hidden: bool = False) -> ParsedChat:
    """Every message of a SillyTavern chat file, in file order, with each bad line's number and reason.

    ``ChatFormatError`` when the first non-blank line is neither a chat header nor a message. Hidden messages (``is_system``) are left
    out unless ``include_hidden``; empty ones always (an image without text): both counted in ``skipped``."""
    numbered = ((n, line) for n, line in enumerate(lines, start=1) if line.strip())
    first = next(numbered, None)
    if first is None:
        raise ChatFormatError("the file is empty")
    header = _header(first[1])
    chat = ParsedChat(header or ChatHeader("", "", ""))
    for number, line in itertools.chain([] if header else [first], numbered):
        try:
            data = json.loads(line)
        except ValueError as exc:
            chat.problems.append(LineProblem(number, f"not JSON: {exc}"))
            continue
        try:
            message = _message(number, data, zone)
        except ValueError as exc:
            chat.problems.append(LineProblem(number, str(exc)))
            continue
        if data.get("is_system") is True and not include_hidden:
            chat.skipped["hidden"] += 1
        elif not message.text.strip():
            chat.skipped["empty"] += 1
        else:
            chat.messages.append(message)
    return chat
