"""Which format a chat file is in, and reading it in that format: pure (no I/O, no contract).

``auto`` tells the formats apart by their shapes, as SillyTavern's own importer does (``/import`` in its
``src/endpoints/chats.js``): a JSON document with ``type: risuChat`` (or ``risuAllChats``) is RisuAI's, one with
``internal`` and ``visible`` (or ``data`` and ``data_visible``) text-generation-webui's, one with a ``messages``
list Agnaistic's; anything else is read as SillyTavern's JSONL, one JSON object a line, whose first line alone
can also be a whole JSON document (a chat of just its header).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, tzinfo
from typing import Any

from mnemo.services.memory.chat_import.exports import parse_agnai, parse_oobabooga, parse_risuai
from mnemo.services.memory.chat_import.formats import ChatFormatError, ParsedChat, parse_sillytavern

FORMATS = ("auto", "sillytavern", "agnai", "risuai", "oobabooga")
_ST_KEYS = {"user_name", "character_name", "chat_metadata", "mes"}


def detect_format(document: Any) -> str:
    """The format of a file whose whole text is this JSON value (``None`` when it is not one JSON value)."""
    if isinstance(document, dict):
        if document.get("type") in ("risuChat", "risuAllChats"):
            return "risuai"
        if ("internal" in document and "visible" in document) or ("data" in document and "data_visible" in document):
            return "oobabooga"
        if isinstance(document.get("messages"), list) and not _ST_KEYS & set(document):
            return "agnai"
    return "sillytavern"


def _whole_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None  # JSONL of more than one line, or no JSON: SillyTavern's reader says which line is bad


def parse_chat(
    text: str, fmt: str = "auto", zone: tzinfo = UTC, *, include_hidden: bool = False,
    started_at: datetime | None = None, character_name: str | None = None,
) -> ParsedChat:  # fmt: skip
    """The chat in ``text``, read as ``fmt`` (``auto``: as ``detect_format`` finds it). ``ChatFormatError`` when
    it is no chat of that format; a message that cannot be read is in ``problems`` with its line or position."""
    if fmt not in FORMATS:
        raise ChatFormatError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
    if started_at is not None and started_at.tzinfo is None:
        started_at = started_at.replace(tzinfo=zone)
    document = _whole_json(text) if fmt != "sillytavern" else None
    found = detect_format(document) if fmt == "auto" else fmt
    if found == "sillytavern":
        return parse_sillytavern(text.splitlines(), zone, include_hidden=include_hidden)
    if not isinstance(document, dict):
        what = "not JSON" if document is None else f"a JSON {type(document).__name__}, not an object"
        raise ChatFormatError(f"not a chat export of format {found}: the file is {what}")
    if found == "agnai":
        return parse_agnai(document, started_at=started_at, character_name=character_name)
    if found == "risuai":
        return parse_risuai(
            document, zone, include_hidden=include_hidden, started_at=started_at, character_name=character_name
        )
    return parse_oobabooga(document, zone, started_at=started_at, character_name=character_name)
