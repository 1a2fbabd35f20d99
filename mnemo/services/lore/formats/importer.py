"""`import_lorebook`: detect a lorebook's format and normalise it (spec §1, §6, §7).

Accepted: SillyTavern World Info JSON (Chub exports included), character cards V2/V3 as JSON or PNG, bare
`character_book` and `lorebook_v3` JSON, NovelAI, Agnai and RisuAI books. The source document is returned with
the result so the exporter can write back fields mnemo does not model.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import ValidationError

from mnemo.services.lore.formats.cards import (
    PNG_SIGNATURE,
    book_from_card,
    card_from_png,
    png_text_chunks,
    read_character_book,
)
from mnemo.services.lore.formats.convert import (
    ImportResult,
    LoreImportError,
    MalformedFileError,
    NotALorebookError,
    Sink,
    UnsupportedFormatError,
)
from mnemo.services.lore.formats.foreign import read_agnai, read_novelai, read_risu
from mnemo.services.lore.formats.st_format import read_world_info
from mnemo.shared.lore.keys import regex_key_problem
from mnemo.shared.lore.model import Lorebook

Format = Literal["auto", "sillytavern", "chub", "card", "character_book", "lorebook_v3", "novelai", "agnai", "risu"]
__all__ = ["Format", "ImportResult", "LoreImportError", "import_lorebook"]
_V2_MIRRORS = ("keys", "insertion_order", "enabled", "secondary_keys")


def import_lorebook(
    data: dict[str, Any] | bytes,
    format: Format = "auto",
    *,
    name: str = "Imported lorebook",
    extensions_fallback: bool = False,
) -> ImportResult:
    """Normalise ``data`` into a Lorebook with one warning per normalised entry field.

    ``extensions_fallback`` reads values that a Chub export keeps only under ``extensions`` (SillyTavern ignores
    them, so this is off by default). Raises a ``LoreImportError`` subclass naming what is wrong with the file.
    """
    try:
        return _import(data, format, name, extensions_fallback)
    except ValidationError as exc:  # a value no normalisation above brought within the model's bounds
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"])
        raise MalformedFileError(f"an entry's {where}: {problem['msg']}") from exc


def _import(data: dict[str, Any] | bytes, format: Format, name: str, extensions_fallback: bool) -> ImportResult:
    doc = _document(data)
    detected = _detect(doc) if format == "auto" else format
    sink = Sink()
    book: Lorebook
    if detected in ("sillytavern", "chub"):
        _require(doc, "entries", dict, detected)
        book = read_world_info(doc, name, sink, extensions_fallback=extensions_fallback)
        book = book.model_copy(update={"source_format": detected})
    elif detected == "card":
        book, _raw = book_from_card(doc, sink)
        book = book.model_copy(update={"source_format": f"card_{_card_version(doc)}"})
    elif detected == "character_book":
        _require(doc, "entries", list, detected)
        sink.warn(None, "format", "bare character_book: SillyTavern would import it inert; converted as a card book")
        book = read_character_book(doc, name, sink)
    elif detected == "lorebook_v3":
        inner = doc.get("data")
        if not isinstance(inner, dict):
            raise MalformedFileError("lorebook_v3 file has no `data` object")
        sink.warn(None, "format", "lorebook_v3 is rejected by SillyTavern; converted as a card book")
        book = read_character_book(inner, name, sink).model_copy(update={"source_format": "lorebook_v3"})
    elif detected == "novelai":
        book = read_novelai(doc, name, sink)
    elif detected == "agnai":
        book = read_agnai(doc, name, sink)
    elif detected == "risu":
        book = read_risu(doc, name, sink)
    else:
        raise NotALorebookError(f"unknown format {detected!r}")
    _check_regex_keys(book, sink)
    return ImportResult(book=book, warnings=sink.warnings, format=detected, original=doc)


def _check_regex_keys(book: Lorebook, sink: Sink) -> None:
    """One warning per regex key that cannot run as a regex, in any format: refused (RE2 cannot express it,
    so it never matches) or not a valid regex (matched as plain text, as SillyTavern does)."""
    for entry in book.entries:
        for name, keys in (("key", entry.key), ("keysecondary", entry.keysecondary)):
            for key in keys:
                problem = regex_key_problem(key)
                if problem:
                    sink.warn(entry.uid, name, problem)


def _document(data: dict[str, Any] | bytes) -> dict[str, Any]:
    if isinstance(data, dict):
        return data
    if not isinstance(data, bytes | bytearray):
        raise MalformedFileError(f"expected a JSON object or file bytes, got {type(data).__name__}")
    raw = bytes(data)
    if raw.startswith(PNG_SIGNATURE):
        chunks = png_text_chunks(raw)
        if "naidata" in chunks and "ccv3" not in chunks and "chara" not in chunks:
            return _parse_json(_b64_or_text(chunks["naidata"]), "PNG `naidata` chunk")
        return card_from_png(raw)
    return _parse_json(raw, "file")


def _parse_json(raw: bytes, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise MalformedFileError(f"{what} is neither a PNG nor UTF-8 text: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise MalformedFileError(
            f"{what} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    if not isinstance(doc, dict):
        raise NotALorebookError(f"{what} holds a JSON {type(doc).__name__}, not an object")
    return doc


def _b64_or_text(raw: bytes) -> bytes:
    import base64
    import binascii

    stripped = raw.strip()
    if stripped.startswith(b"{"):
        return stripped
    try:
        return base64.b64decode(stripped)
    except binascii.Error as exc:
        raise MalformedFileError(f"PNG `naidata` chunk is neither JSON nor base64: {exc}") from exc


def _detect(doc: dict[str, Any]) -> Format:
    """Detection in SillyTavern's order (spec §7), with cards and bare books recognised first by their shape."""
    spec = doc.get("spec")
    if spec in ("chara_card_v2", "chara_card_v3"):
        return "card"
    if spec == "lorebook_v3":
        return "lorebook_v3"
    if "lorebookVersion" in doc:
        return "novelai"
    if doc.get("kind") == "memory":
        return "agnai"
    if doc.get("type") == "risu":
        return "risu"
    entries = doc.get("entries")
    if isinstance(entries, dict):
        chub = any(isinstance(e, dict) and any(m in e for m in _V2_MIRRORS) for e in entries.values())
        return "chub" if chub else "sillytavern"
    if isinstance(entries, list):
        return "character_book"
    if isinstance(doc.get("data"), dict) and "character_book" in doc["data"]:
        return "card"
    if "name" in doc and ("char_persona" in doc or "description" in doc or "first_mes" in doc):
        raise UnsupportedFormatError("a V1 or Pygmalion character card: those carry no lorebook")
    raise NotALorebookError(
        "no `entries`, `spec`, `lorebookVersion`, `kind: memory` or `type: risu`: not a lorebook or card"
    )


def _require(doc: dict[str, Any], field: str, kind: type, fmt: str) -> None:
    if field not in doc:
        raise MalformedFileError(f"{fmt} file has no `{field}`")
    if not isinstance(doc[field], kind):
        raise MalformedFileError(f"{fmt} file: `{field}` must be a JSON {'object' if kind is dict else 'array'}")


def _card_version(doc: dict[str, Any]) -> str:
    return "v3" if doc.get("spec") == "chara_card_v3" else "v2"
