"""Character cards V2/V3 (JSON or PNG) and bare character books, converted the way SillyTavern's
`convertCharacterBook` does (spec §6.3), with the two deliberate deviations of spec §8.2: a missing `enabled`
means enabled (SillyTavern disables it), and a top-level `case_sensitive` is used when `extensions` has none.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
import zlib
from typing import Any

from mnemo.services.lore.formats.convert import (
    MISSING,
    MalformedFileError,
    Sink,
    UnsupportedFormatError,
    book_with_settings,
    number,
    objects,
    string_list,
    truthy,
)
from mnemo.services.lore.formats.fields import FIELDS, bounded, coerce
from mnemo.services.lore.formats.st_format import check_semantics, normalise_probability, split_mnemo_extensions
from mnemo.shared.lore.model import Lorebook, LoreEntry
from mnemo_client.wire.lore_contract import MAX_UID

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Card-book defaults where `convertCharacterBook` differs from the World Info template.
_CARD_DEFAULTS = {"selective": False, "role": 0}


def png_text_chunks(data: bytes) -> dict[str, bytes]:
    """The tEXt/zTXt/iTXt chunks of a PNG (keyword -> raw text), read with the standard library."""
    if not data.startswith(PNG_SIGNATURE):
        raise MalformedFileError("not a PNG file (bad signature)")
    chunks: dict[str, bytes] = {}
    pos = len(PNG_SIGNATURE)
    while pos + 8 <= len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if len(body) < length:
            raise MalformedFileError(f"truncated PNG: chunk {kind!r} at byte {pos} is cut short")
        keyword, _, rest = body.partition(b"\0")
        name = keyword.decode("latin-1")
        if kind == b"tEXt":
            chunks.setdefault(name, rest)
        elif kind == b"zTXt" and rest:
            chunks.setdefault(name, _inflate(rest[1:], name))
        elif kind == b"iTXt" and len(rest) >= 2:
            compressed, text = rest[0], rest[2:].split(b"\0", 2)[-1]
            chunks.setdefault(name, _inflate(text, name) if compressed else text)
        if kind == b"IEND":
            return chunks
        pos += 12 + length
    raise MalformedFileError("truncated PNG: the file ends before its IEND chunk")


def card_from_png(data: bytes) -> dict[str, Any]:
    """The card JSON of a PNG: the `ccv3` chunk if present, else `chara` (both base64 JSON)."""
    chunks = png_text_chunks(data)
    for keyword in ("ccv3", "chara"):
        if keyword in chunks:
            try:
                card = json.loads(base64.b64decode(chunks[keyword], validate=False).decode("utf-8"))
            except (binascii.Error, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise MalformedFileError(f"PNG `{keyword}` chunk is not base64 JSON: {exc}") from exc
            if not isinstance(card, dict):
                raise MalformedFileError(f"PNG `{keyword}` chunk holds JSON that is not an object")
            return card
    raise UnsupportedFormatError("PNG has no `ccv3` or `chara` text chunk: it is not a character card")


def book_from_card(card: dict[str, Any], sink: Sink) -> tuple[Lorebook, dict[str, Any]]:
    """The embedded `character_book` of a V2/V3 card as a normalised book, and the raw book."""
    data = card.get("data")
    if not isinstance(data, dict):
        raise MalformedFileError(f"card with spec {card.get('spec')!r} has no `data` object")
    book = data.get("character_book")
    if not isinstance(book, dict):
        raise UnsupportedFormatError(f"card {data.get('name')!r} has no embedded `character_book` to import")
    fallback = f"{data.get('name') or card.get('name') or 'Character'}'s Lorebook"
    return read_character_book(book, fallback, sink), book


def read_character_book(book: dict[str, Any], fallback_name: str, sink: Sink) -> Lorebook:
    """Convert a V2/V3 `character_book` (`entries` is a list) into a normalised book."""
    raw_entries = book.get("entries")
    if not isinstance(raw_entries, list):
        raise MalformedFileError("`character_book.entries` must be a list")
    entries: dict[int, LoreEntry] = {}
    for index, raw in objects(raw_entries, "entries", sink):
        entry = card_entry(raw, index, sink)
        if entry.uid in entries:
            # SillyTavern lets duplicate ids overwrite each other; keeping both is what the author meant.
            new_uid = max(entries) + 1
            sink.warn(entry.uid, "id", f"duplicate id; entry {index} given the free uid {new_uid}")
            entry = entry.model_copy(update={"uid": new_uid})
        entries[entry.uid] = entry
    return book_with_settings(book, entries, fallback_name, "character_book")


def card_entry(raw: dict[str, Any], index: int, sink: Sink) -> LoreEntry:
    """One card-book entry, mapped field by field as in spec §6.3's table."""
    uid = _card_uid(raw.get("id", MISSING), index, sink)
    ext: dict[str, Any] = dict(raw["extensions"]) if isinstance(raw.get("extensions"), dict) else {}
    values: dict[str, Any] = {"uid": uid}
    for alias, ext_key, kind, default in FIELDS:
        top_level = alias in ("comment", "content", "constant")
        value = raw.get(alias, MISSING) if top_level else ext.get(ext_key, MISSING)
        values[alias] = coerce(kind, value, _CARD_DEFAULTS.get(alias, default), uid, alias, sink)
    if ext.get("case_sensitive") is None and isinstance(raw.get("case_sensitive"), bool):
        values["caseSensitive"] = raw["case_sensitive"]  # deviation (spec §8.2): ST ignores the top-level flag
    values["addMemo"] = bool(values["comment"])
    values["displayIndex"] = values["displayIndex"] if values["displayIndex"] is not None else index
    values["key"] = string_list(raw.get("keys"), uid, "keys", sink, comma_split=True)
    values["keysecondary"] = string_list(raw.get("secondary_keys"), uid, "secondary_keys", sink, comma_split=True)
    values["selective"] = truthy(raw.get("selective"))
    if "selective" not in raw and values["keysecondary"]:
        sink.warn(uid, "selective", "missing: SillyTavern ignores the secondary keys; set to false")
    enabled = raw.get("enabled", MISSING)
    if enabled is MISSING:
        sink.warn(uid, "enabled", "missing: SillyTavern would disable the entry; mnemo keeps it enabled (spec §8.2)")
    values["disable"] = enabled is not MISSING and not enabled
    order = number(raw.get("insertion_order"))
    if order is None:
        sink.warn(uid, "insertion_order", f"{raw.get('insertion_order')!r} is not a number; set to the default 100")
    values["order"] = bounded(order, uid, "insertion_order", sink) if order is not None else 100
    values["position"] = _card_position(raw.get("position"), ext.get("position", MISSING), uid, sink)
    prob = ext.get("probability", MISSING)
    use = ext.get("useProbability", MISSING)
    if prob is MISSING and use is MISSING:
        values["probability"], values["useProbability"] = 100, True
    else:
        values["probability"], values["useProbability"] = normalise_probability(
            100 if prob is MISSING else prob, True if use is MISSING else use, uid, sink
        )
    check_semantics(values, uid, sink)
    values["extensions"], values["activationMode"] = split_mnemo_extensions(ext, values["vectorized"])
    return LoreEntry.model_validate(values)


def _card_position(top: Any, ext_position: Any, uid: int, sink: Sink) -> int:
    """`extensions.position` if present, else `before_char` -> 0 and anything else (even missing) -> 1."""
    if ext_position is not MISSING and ext_position is not None:
        parsed = number(ext_position)
        if isinstance(parsed, int) and 0 <= parsed <= 7:
            return parsed
        sink.warn(uid, "extensions.position", f"{ext_position!r} is not a valid position; inserted nowhere (-1)")
        return parsed if isinstance(parsed, int) else -1
    if top == "before_char":
        return 0
    if top != "after_char":
        sink.warn(uid, "position", f"{top!r} is neither before_char nor after_char; read as after_char (1), as ST does")
    return 1


def _card_uid(value: Any, index: int, sink: Sink) -> int:
    parsed = number(value) if value is not MISSING else None
    if isinstance(parsed, int) and 0 <= parsed <= MAX_UID and not isinstance(value, bool):
        if isinstance(value, str):
            sink.warn(parsed, "id", f"text id {value!r} read as the number {parsed}")
        return parsed
    if value is not MISSING and value is not None:
        sink.warn(index, "id", f"{value!r} is not a numeric id; the array index {index} is used")
    return index


def _inflate(data: bytes, name: str) -> bytes:
    try:
        return zlib.decompress(data)
    except zlib.error as exc:
        raise MalformedFileError(f"PNG chunk {name!r} is not valid zlib data: {exc}") from exc
