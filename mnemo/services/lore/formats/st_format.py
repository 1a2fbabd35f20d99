"""SillyTavern World Info files (and Chub exports, which are World Info plus V2 mirror fields).

SillyTavern's scanner reads the top-level camelCase fields raw, so those win; V2 mirrors (`keys`,
`insertion_order`, `enabled`, ...) and values that exist only under `extensions` are ignored unless the caller
opts into the Chub fallback (spec §7, §8.2). Each entry is normalised to what SillyTavern does with it, with a
warning wherever that differs from what the file seems to say.
"""

from __future__ import annotations

from typing import Any

from mnemo.services.lore.formats.convert import (
    MISSING,
    MalformedFileError,
    Sink,
    book_with_settings,
    number,
    objects,
    string_list,
    truthy,
)
from mnemo.services.lore.formats.fields import FIELDS, bounded, coerce
from mnemo.shared.lore.model import Lorebook, LoreEntry, Position
from mnemo_client.wire.lore_contract import MAX_UID

MNEMO_EXT = "mnemo"  # extensions key where mnemo keeps its own fields (activation mode) in exported files
_NEUTRAL: tuple[Any, ...] = (None, "", False, 0, [], {})
_POSITIONS = frozenset(p.value for p in Position)


def read_world_info(doc: dict[str, Any], name: str, sink: Sink, *, extensions_fallback: bool = False) -> Lorebook:
    """Normalise a World Info document (`entries` is an object keyed by uid)."""
    raw_entries = doc["entries"]
    if not isinstance(raw_entries, dict):
        raise MalformedFileError("`entries` must be an object keyed by uid")
    entries: dict[int, LoreEntry] = {}
    for map_key, raw in objects(raw_entries, "entries", sink):
        entry = read_entry(raw, map_key, sink, extensions_fallback=extensions_fallback)
        if entry.uid in entries:
            sink.warn(entry.uid, "uid", f"duplicate uid (map key {map_key!r}); the later entry wins, as in SillyTavern")
        entries[entry.uid] = entry
    return book_with_settings(doc, entries, name, "sillytavern")


def read_entry(raw: dict[str, Any], map_key: str, sink: Sink, *, extensions_fallback: bool = False) -> LoreEntry:
    uid = _uid(raw.get("uid"), map_key, sink)
    ext: dict[str, Any] = raw["extensions"] if isinstance(raw.get("extensions"), dict) else {}
    values: dict[str, Any] = {"uid": uid}
    for alias, ext_key, kind, default in FIELDS:
        value = raw.get(alias, MISSING)
        if value is MISSING:
            hidden = ext.get(alias, ext.get(ext_key, MISSING))
            if hidden is not MISSING and hidden not in _NEUTRAL and hidden != default:
                if extensions_fallback:
                    value = hidden
                    sink.warn(uid, alias, f"missing at top level; took extensions value {hidden!r} (Chub fallback)")
                else:
                    sink.warn(uid, alias, f"only in extensions ({hidden!r}); ignored, as SillyTavern does")
        values[alias] = coerce(kind, value, default, uid, alias, sink)
    values["key"] = _keys(raw.get("key", MISSING), uid, "key", sink)
    values["keysecondary"] = _keys(raw.get("keysecondary", MISSING), uid, "keysecondary", sink)
    values["characterFilter"] = _character_filter(raw.get("characterFilter"))
    values["order"] = _order(raw.get("order", MISSING), uid, sink)
    values["position"] = normalise_position(raw.get("position", MISSING), uid, sink)
    values["selective"] = _selective(raw.get("selective", MISSING), values["keysecondary"], uid, sink)
    values["probability"], values["useProbability"] = normalise_probability(
        raw.get("probability", MISSING), raw.get("useProbability", MISSING), uid, sink
    )
    check_semantics(values, uid, sink)
    values["extensions"], values["activationMode"] = split_mnemo_extensions(dict(ext), values["vectorized"])
    return LoreEntry.model_validate(values)


def split_mnemo_extensions(ext: dict[str, Any], vectorized: bool) -> tuple[dict[str, Any], str]:
    """Take mnemo's activation mode out of `extensions` (written by our exporter); else derive it."""
    mnemo = ext.pop(MNEMO_EXT, None)
    mode = mnemo.get("activation_mode") if isinstance(mnemo, dict) else None
    if mode not in ("keyword", "vector", "hybrid"):
        mode = "hybrid" if vectorized else "keyword"
    return ext, str(mode)


def normalise_position(value: Any, uid: int, sink: Sink) -> int:
    """SillyTavern places by `position === n`: anything but an integer 0-7 is activated but inserted nowhere."""
    parsed = number(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    if isinstance(parsed, int):
        if parsed not in _POSITIONS:
            sink.warn(
                uid, "position", f"{parsed} is not a valid position; kept: activated and budgeted, inserted nowhere"
            )
        return parsed
    shown = "missing" if value is MISSING else repr(value)
    sink.warn(
        uid, "position", f"{shown} is not a numeric position; stored as -1: activated and budgeted, inserted nowhere"
    )
    return -1


def normalise_probability(prob: Any, use: Any, uid: int, sink: Sink) -> tuple[int | float, bool]:
    """`useProbability` missing means no roll; with the roll on, a null/missing probability never passes."""
    use_roll = truthy(use)
    parsed = number(prob) if prob is not MISSING and prob is not None else None
    parsed = bounded(parsed, uid, "probability", sink) if parsed is not None else None
    if use is MISSING:
        if parsed is not None and parsed < 100:
            sink.warn(uid, "useProbability", f"missing: SillyTavern does not roll, so probability {parsed} is inert")
        return (parsed if parsed is not None else 100), False
    if use_roll and parsed is None:
        shown = "missing" if prob is MISSING else repr(prob)
        sink.warn(uid, "probability", f"{shown} with useProbability on: SillyTavern never activates it; set to 0")
        return 0, True
    if parsed is not None and not 0 <= parsed <= 100:
        sink.warn(uid, "probability", f"{parsed} is outside 0-100; kept (the roll compares random*100 <= value)")
    return (parsed if parsed is not None else 100), use_roll


def check_semantics(values: dict[str, Any], uid: int, sink: Sink) -> None:
    """Warnings for values that import fine but behave surprisingly in SillyTavern (and so in mnemo)."""
    if values["selectiveLogic"] not in (0, 1, 2, 3) and values["selective"] and values["keysecondary"]:
        sink.warn(uid, "selectiveLogic", f"{values['selectiveLogic']} is not a valid logic; the entry never activates")
    if values["role"] not in (0, 1, 2):
        sink.warn(uid, "role", f"{values['role']} is not a valid role; read as 0 (system)")
        values["role"] = 0
    for name in ("key", "keysecondary"):
        for key in values[name]:
            if key and not key.strip():
                sink.warn(uid, name, f"key {key!r} is only whitespace: SillyTavern matches it against any text")


def _keys(value: Any, uid: int, name: str, sink: Sink) -> list[str]:
    if value is MISSING:
        return []
    return string_list(value, uid, name, sink)


def _key_uid(map_key: str) -> int | None:
    """The map key as a uid: ASCII digits up to ``MAX_UID`` (``str.isdigit`` also takes ``²`` and other digits
    ``int`` refuses, and a very long number would be refused by ``int`` too)."""
    if not (map_key.isascii() and map_key.isdigit()) or len(map_key) > len(str(MAX_UID)):
        return None
    uid = int(map_key)
    return uid if uid <= MAX_UID else None


def _uid(value: Any, map_key: str, sink: Sink) -> int:
    parsed = number(value)
    from_key = _key_uid(map_key)
    if isinstance(parsed, int) and not isinstance(value, bool) and 0 <= parsed <= MAX_UID:
        if from_key is not None and from_key != parsed:
            sink.warn(parsed, "uid", f"differs from its map key {map_key!r}; the uid field is used")
        return parsed
    if from_key is not None:
        if value is not None:
            sink.warn(from_key, "uid", f"{value!r} is not a uid; the map key {map_key} is used")
        return from_key
    raise MalformedFileError(
        f"entry {map_key[:40]!r} has no usable uid ({str(value)[:40]!r}): a uid is a whole number from 0 to {MAX_UID}"
    )


def _order(value: Any, uid: int, sink: Sink) -> int | float:
    parsed = number(value) if value is not MISSING else None
    if parsed is None:
        shown = "missing" if value is MISSING else repr(value)
        sink.warn(uid, "order", f"{shown}: SillyTavern's sort is then unstable; set to the default 100")
        return 100
    if isinstance(value, str):
        sink.warn(uid, "order", f"text {value!r} read as the number {parsed}")
    return bounded(parsed, uid, "order", sink)


def _selective(value: Any, secondary: list[str], uid: int, sink: Sink) -> bool:
    if value is MISSING:
        if secondary:
            sink.warn(uid, "selective", "missing: SillyTavern ignores the secondary keys; set to false")
            return False
        return True
    return truthy(value)


def _character_filter(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        return {}
    names = value.get("names")
    tags = value.get("tags")
    return {
        "isExclude": value.get("isExclude") is True,
        "names": [str(n) for n in names] if isinstance(names, list) else [],
        "tags": [str(t) for t in tags] if isinstance(tags, list) else [],
    }
