"""Reading the JSON chat exports of other character-chat platforms, pure (no I/O, no contract).

Each format as its exporter writes it (docs/import.md links each source):

- **Agnaistic** (``web/pages/Chat/ChatExport.tsx`` of agnaistic/agnai): ``{"name", "greeting", "sampleChat",
  "scenario", "messages": [{"handle"?, "userId"?, "characterId"?, "msg", "state"?}]}``. A message with a
  ``userId`` is the user's (``handle`` is their name); any other is the character's. No times at all.
- **RisuAI** (``exportChat`` in ``src/ts/characters.ts`` of kwaroran/RisuAI): ``{"type": "risuChat", "ver": 1|2,
  "data": Chat}``; ``Chat.message`` is ``[{"role": "user"|"char", "data", "saying"?, "time"?, "name"?,
  "disabled"?, "isComment"?}]`` (``Message`` in ``src/ts/storage/database.svelte.ts``); ``time`` is Unix
  milliseconds, absent on messages older than it; ``disabled: true`` and ``isComment`` keep a message from the
  model. ``risuAllChats`` holds every chat of a character: one chat in it is read, more are refused.
- **oobabooga** text-generation-webui (``save_history`` / ``load_history`` in ``modules/chat.py``):
  ``{"internal": [[user, bot], ...], "visible": [...], "metadata": {"user_<row>"|"assistant_<row>":
  {"timestamp": "Jan 05, 2025 14:03", "versions"?: [...]}}}``, or before metadata ``{"data", "data_visible"}``
  (also what CAI Tools writes for Character.AI chats). ``internal`` holds the texts as written (``visible`` is
  their HTML); ``<|BEGIN-VISIBLE-CHAT|>`` stands in the user's place beside the character's greeting.

Names a format does not carry are ``character_name`` (the caller's, default ``Character``) and ``You`` for the
user (the name SillyTavern's and text-generation-webui's importers give). A time a message lacks is filled by
``fill_times``: deterministic, so a second import of the same file gives the same events.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, tzinfo
from typing import Any

from mnemo.services.memory.chat_import.formats import (
    ChatFormatError,
    ChatHeader,
    ExportedMessage,
    LineProblem,
    ParsedChat,
    Role,
    parse_time,
)

USER_NAME = "You"
CHARACTER_NAME = "Character"
SPACING = timedelta(seconds=1)  # between a message without a time and the one before it
_OOBA_GREETING = "<|BEGIN-VISIBLE-CHAT|>"


class _Draft:
    """A message read, its time perhaps still unknown; ``skip`` says why it is left out (hidden, empty)."""

    def __init__(
        self, position: int, name: str, role: Role, text: str, at: datetime | None, alternatives: int = 0
    ) -> None:
        self.position, self.name, self.role, self.text, self.at = position, name, role, text, at
        self.alternatives = alternatives
        self.skip: str | None = "empty" if not text.strip() else None


def fill_times(times: Sequence[datetime | None], started_at: datetime | None, what: str) -> list[datetime]:
    """Every message's time: its own; else one second after the message before it; the first ones, before any
    time, at ``started_at`` and a second apart, else a second apart up to the file's first time. ``ValueError``
    naming ``started_at`` when the file has no time at all and none is given."""
    first_known = next((i for i, t in enumerate(times) if t is not None), None)
    if first_known is None and started_at is None and times:
        raise ValueError(f"{what} has no times: give started_at (--started-at), when the chat began")
    filled: list[datetime] = []
    for i, at in enumerate(times):
        if at is not None:
            filled.append(at)
        elif filled:
            filled.append(filled[-1] + SPACING)
        elif started_at is not None:
            filled.append(started_at)
        else:
            assert first_known is not None  # refused above
            known = times[first_known]
            assert known is not None
            filled.append(known - SPACING * (first_known - i))
    return filled


def _finish(chat: ParsedChat, drafts: list[_Draft], started_at: datetime | None, what: str) -> ParsedChat:
    # Times are filled over every message read, the skipped ones too, so a message's time does not depend on
    # whether the ones before it are imported (``include_hidden``).
    times = fill_times([d.at for d in drafts], started_at, what)
    for draft, at in zip(drafts, times, strict=True):
        if draft.skip is not None:
            chat.skipped[draft.skip] += 1
        else:
            chat.messages.append(
                ExportedMessage(draft.position, draft.name, draft.role, draft.text, at, draft.alternatives)
            )
    return chat


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where}: " + ("missing" if value is None else f"a {type(value).__name__}, not text"))
    return value


def parse_agnai(data: dict[str, Any], *, started_at: datetime | None, character_name: str | None) -> ParsedChat:
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise ChatFormatError("not an Agnaistic chat export: no messages list")
    character = character_name or CHARACTER_NAME
    chat = ParsedChat(ChatHeader(USER_NAME, character, ""), format="agnai", unit="message")
    drafts: list[_Draft] = []
    for i, item in enumerate(messages):
        try:
            if not isinstance(item, dict):
                raise ValueError(f"messages[{i}]: a message is a JSON object, not {type(item).__name__}")
            text = _text(item.get("msg"), f"messages[{i}].msg")
        except ValueError as exc:
            chat.problems.append(LineProblem(i + 1, str(exc)))
            continue
        role: Role = "user" if item.get("userId") else "assistant"
        handle = item.get("handle")
        name = (handle if isinstance(handle, str) and handle.strip() else USER_NAME) if role == "user" else character
        drafts.append(_Draft(i + 1, name, role, text, None))
    first = drafts[0].text if drafts else ""
    chat.identity = "\0".join(("agnai", str(data.get("name")), str(data.get("greeting")), first))
    return _finish(chat, drafts, started_at, "an Agnaistic chat export")


def parse_risuai(
    data: dict[str, Any], zone: tzinfo, *, include_hidden: bool, started_at: datetime | None,
    character_name: str | None,
) -> ParsedChat:  # fmt: skip
    body = data.get("data")
    if data.get("type") == "risuAllChats" and isinstance(body, list):
        if len(body) != 1:
            raise ChatFormatError(f"a RisuAI export of {len(body)} chats: export each chat alone (risuChat)")
        body = body[0]
    if not isinstance(body, dict) or not isinstance(body.get("message"), list):
        raise ChatFormatError("not a RisuAI chat export: data.message is no list")
    items: list[Any] = body["message"]
    sayers = {m.get("saying") for m in items if isinstance(m, dict) and m.get("role") == "char" and m.get("saying")}
    character = character_name or CHARACTER_NAME
    chat = ParsedChat(ChatHeader(USER_NAME, character, ""), format="risuai", unit="message")
    drafts: list[_Draft] = []
    for i, item in enumerate(items):
        where = f"data.message[{i}]"
        try:
            if not isinstance(item, dict):
                raise ValueError(f"{where}: a message is a JSON object, not {type(item).__name__}")
            text = _text(item.get("data"), f"{where}.data")
            role = item.get("role")
            if role not in ("user", "char"):
                raise ValueError(f"{where}.role: {role!r}, not user or char")
            at = None if item.get("time") is None else _time(item["time"], zone, f"{where}.time")
        except ValueError as exc:
            chat.problems.append(LineProblem(i + 1, str(exc)))
            continue
        if role == "user":
            name = item["name"] if isinstance(item.get("name"), str) and item["name"].strip() else USER_NAME
        else:  # a group chat's characters are told apart by their ids (``saying``), a one-character chat by name
            name = str(item["saying"]) if len(sayers) > 1 and item.get("saying") else character
        draft = _Draft(i + 1, name, "user" if role == "user" else "assistant", text, at)
        if (item.get("disabled") is True or item.get("isComment") is True) and not include_hidden:
            draft.skip = "hidden"
        drafts.append(draft)
    first = drafts[0].text if drafts else ""
    chat.identity = "\0".join(("risuai", str(body.get("id") or ""), str(body.get("name") or ""), first))
    return _finish(chat, drafts, started_at, "this RisuAI chat export")


def _time(value: Any, zone: tzinfo, where: str) -> datetime:
    try:
        return parse_time(value, zone)
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"{where}: {exc}") from None


def _ooba_time(meta: Any, zone: tzinfo, where: str) -> tuple[datetime | None, int]:
    """A row's time (``%b %d, %Y %H:%M``, local, as ``get_current_timestamp`` writes it; empty before it did)
    and its versions besides the one shown."""
    if not isinstance(meta, dict):
        return None, 0
    versions = meta.get("versions")
    alternatives = max(len(versions) - 1, 0) if isinstance(versions, list) else 0
    stamp = meta.get("timestamp")
    if not stamp:
        return None, alternatives
    try:
        return datetime.strptime(str(stamp), "%b %d, %Y %H:%M").replace(tzinfo=zone), alternatives
    except ValueError:
        return _time(stamp, zone, f"{where}.timestamp"), alternatives


def parse_oobabooga(
    data: dict[str, Any], zone: tzinfo, *, started_at: datetime | None, character_name: str | None
) -> ParsedChat:
    key = "internal" if "internal" in data else "data"
    rows = data.get(key)
    if not isinstance(rows, list):
        raise ChatFormatError("not a text-generation-webui chat history: no internal (or data) list")
    found = data.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    character = character_name or CHARACTER_NAME
    chat = ParsedChat(ChatHeader(USER_NAME, character, ""), format="oobabooga", unit="message")
    drafts: list[_Draft] = []
    for row_index, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != 2:
            chat.problems.append(LineProblem(2 * row_index + 1, f"{key}[{row_index}]: a row is [user, character]"))
            continue
        sides: tuple[tuple[Role, str], ...] = (("user", USER_NAME), ("assistant", character))
        for side, (role, name) in enumerate(sides):
            position, where = 2 * row_index + side + 1, f"{key}[{row_index}][{side}]"
            meta_key = f"{role}_{row_index}"
            try:
                text = _text(row[side], where)
                at, alternatives = _ooba_time(metadata.get(meta_key), zone, f"metadata.{meta_key}")
            except ValueError as exc:
                chat.problems.append(LineProblem(position, str(exc)))
                continue
            if text == _OOBA_GREETING or (not text and role == "assistant" and row_index == len(rows) - 1):
                continue  # the greeting's empty user side; a last question not answered yet
            drafts.append(_Draft(position, name, role, text, at, alternatives))
    first = drafts[0].text if drafts else ""
    chat.identity = "\0".join(("oobabooga", first, str(drafts[0].at if drafts else "")))
    return _finish(chat, drafts, started_at, "this text-generation-webui history")
