"""Export a normalised book as a SillyTavern World Info file that imports back to the same entries.

Lossless where possible: when the book came from a World Info file, each entry starts from its original raw
object (so V2 mirrors and unknown keys survive) and the normalised fields are written over it; book-level keys
such as `originalData` are kept. A book from a card gets `originalData` = the card's `character_book`, as
SillyTavern's own card import does.
"""

from __future__ import annotations

import copy
from typing import Any

from mnemo.services.lore.formats.st_format import MNEMO_EXT
from mnemo.shared.lore.model import Lorebook, LoreEntry


def export_world_info(book: Lorebook, original: dict[str, Any] | None = None) -> dict[str, Any]:
    """A World Info document (``{"entries": {uid: entry}}``) for ``book``; ``original`` is the imported source."""
    original = original or {}
    raw_entries = original.get("entries") if isinstance(original.get("entries"), dict) else {}
    doc: dict[str, Any] = {}
    if isinstance(original.get("entries"), dict):
        doc = {k: copy.deepcopy(v) for k, v in original.items() if k != "entries"}
    elif isinstance(original.get("data"), dict) and isinstance(original["data"].get("character_book"), dict):
        doc["originalData"] = copy.deepcopy(original["data"]["character_book"])
    if book.name:
        doc.setdefault("name", book.name)
    entries: dict[str, Any] = {}
    for entry in book.entries:
        base = raw_entries.get(str(entry.uid)) if isinstance(raw_entries, dict) else None
        out = copy.deepcopy(base) if isinstance(base, dict) else {}
        out.update(entry_to_world_info(entry))
        entries[str(entry.uid)] = out
    doc["entries"] = entries
    return doc


def entry_to_world_info(entry: LoreEntry) -> dict[str, Any]:
    """One entry in SillyTavern's camelCase shape; mnemo's activation mode goes under `extensions.mnemo`."""
    out = entry.model_dump(by_alias=True, exclude={"activation_mode"})
    derived = "hybrid" if entry.vectorized else "keyword"
    if entry.activation_mode != derived:
        out["extensions"] = {**out["extensions"], MNEMO_EXT: {"activation_mode": entry.activation_mode}}
    if out["delayUntilRecursion"] in (0, 1):
        out["delayUntilRecursion"] = bool(out["delayUntilRecursion"])
    return out
