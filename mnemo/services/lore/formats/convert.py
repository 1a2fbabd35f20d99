"""Import plumbing shared by every format: typed errors, warnings, and JavaScript-style value coercion.

SillyTavern reads files with JavaScript semantics (truthiness, ``??``, ``===``), so the coercions here copy those
rules: the point of normalising is that the engine then behaves as SillyTavern did on the raw file.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, overload

from pydantic import BaseModel, ConfigDict

from mnemo.shared.lore.model import Lorebook, LoreEntry


class LoreImportError(ValueError):
    """The file cannot be read as a lorebook. The message says what is wrong with it."""


class NotALorebookError(LoreImportError):
    """Valid JSON/PNG whose shape is none of the supported formats."""


class MalformedFileError(LoreImportError):
    """Not decodable: bad JSON, bad base64, a truncated or chunk-less PNG."""


class UnsupportedFormatError(LoreImportError):
    """A recognised format that mnemo does not import (for example a card without an embedded book)."""


class ImportWarning(BaseModel):
    """One normalisation: which entry (uid, None for the book), which field, and what was done."""

    model_config = ConfigDict(frozen=True)

    uid: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"entry {self.uid}" if self.uid is not None else "book"
        return f"{where}: {self.field}: {self.message}"


class ImportResult(BaseModel):
    """The normalised book, the warnings, the detected format, and the source document kept for export."""

    book: Lorebook
    warnings: list[ImportWarning]
    format: str
    original: dict[str, Any]


@dataclass
class Sink:
    """Collects warnings while a converter walks a file."""

    warnings: list[ImportWarning] = field(default_factory=list)

    def warn(self, uid: int | None, field_name: str, message: str) -> None:
        self.warnings.append(ImportWarning(uid=uid, field=field_name, message=message))


MISSING: Any = object()


def truthy(value: Any) -> bool:
    """JavaScript truthiness: "", 0, NaN, null and undefined are false; "0", [] and {} are true."""
    if value is MISSING or value is None:
        return False
    if isinstance(value, float) and math.isnan(value):
        return False
    if isinstance(value, bool | int | float | str):
        return bool(value)
    return True


def number(value: Any) -> int | float | None:
    """A JSON number, or a numeric string as JavaScript arithmetic would read it; None otherwise."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return None
        return int(value) if value.is_integer() else value
    if isinstance(value, str) and value.strip():
        try:
            parsed = float(value)
        except ValueError:
            return None
        return number(parsed)
    return None


def string_list(value: Any, uid: int | None, name: str, sink: Sink, *, comma_split: bool = False) -> list[str]:
    """A list of strings. Non-lists become [] (the editor's repair); a string is comma-split where a spec allows."""
    if value is MISSING or value is None:
        return []
    if isinstance(value, str) and comma_split:
        return [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list):
        sink.warn(uid, name, f"not a list ({type(value).__name__}); replaced by []")
        return []
    out: list[str] = []
    for item in value:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, int | float) and not isinstance(item, bool):
            out.append(str(item))
            sink.warn(uid, name, f"number {item!r} in key list kept as text")
        else:
            sink.warn(uid, name, f"dropped a non-text key {item!r}")
    return out


@overload
def objects(container: list[Any], field_name: str, sink: Sink) -> Iterator[tuple[int, dict[str, Any]]]: ...
@overload
def objects(container: dict[str, Any], field_name: str, sink: Sink) -> Iterator[tuple[str, dict[str, Any]]]: ...
def objects(container: list[Any] | dict[str, Any], field_name: str, sink: Sink) -> Iterator[tuple[Any, dict[str, Any]]]:
    """The entries of a list (with their index) or of an object (with their key) that are objects; every other
    one is skipped with a warning naming where it stood, so one bad entry never costs the rest of the book."""
    keyed = isinstance(container, dict)
    for key, raw in container.items() if isinstance(container, dict) else enumerate(container):
        if isinstance(raw, dict):
            yield key, raw
        else:
            sink.warn(None, f"{field_name}.{key}" if keyed else f"{field_name}[{key}]", "not an object; skipped")


def optional_int(value: Any) -> int | None:
    parsed = number(value)
    return int(parsed) if parsed is not None else None


def book_with_settings(
    doc: dict[str, Any], entries: dict[int, LoreEntry], fallback_name: str, source_format: str
) -> Lorebook:
    """A book of ``entries`` (in uid order) carrying the book-level settings SillyTavern keeps in World Info and
    card books alike: name, description, scan depth, token budget, recursive scanning, extensions."""
    name = doc.get("name") if isinstance(doc.get("name"), str) and doc.get("name") else fallback_name
    return Lorebook(
        name=str(name),
        description=str(doc.get("description") or ""),
        entries=[entries[uid] for uid in sorted(entries)],
        scan_depth=optional_int(doc.get("scan_depth")),
        token_budget=optional_int(doc.get("token_budget")),
        recursive_scanning=doc.get("recursive_scanning") if isinstance(doc.get("recursive_scanning"), bool) else None,
        extensions=doc["extensions"] if isinstance(doc.get("extensions"), dict) else {},
        source_format=source_format,
    )
