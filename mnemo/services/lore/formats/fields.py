"""The entry field table (spec §1.2): SillyTavern name, character-book extension key, kind and default.

One table drives the World Info reader, the character-book reader and the exporter, so a field added here is
read and written everywhere.
"""

from __future__ import annotations

from typing import Any, Literal

from mnemo.services.lore.formats.convert import MISSING, Sink, number, truthy
from mnemo.shared.lore.model import MAX_NUMBER

Kind = Literal["bool", "strict_bool", "opt_bool", "int", "opt_int", "num", "str", "timed", "level", "list"]

# (World Info name, character-book `extensions` key, kind, template default)
FIELDS: list[tuple[str, str, Kind, Any]] = [
    ("comment", "comment", "str", ""),
    ("content", "content", "str", ""),
    ("constant", "constant", "bool", False),
    ("vectorized", "vectorized", "bool", False),
    ("selectiveLogic", "selectiveLogic", "int", 0),
    ("addMemo", "addMemo", "bool", False),
    ("depth", "depth", "int", 4),
    ("role", "role", "int", 0),
    ("outletName", "outlet_name", "str", ""),
    ("disable", "disable", "strict_bool", False),
    ("ignoreBudget", "ignore_budget", "bool", False),
    ("excludeRecursion", "exclude_recursion", "bool", False),
    ("preventRecursion", "prevent_recursion", "bool", False),
    ("delayUntilRecursion", "delay_until_recursion", "level", 0),
    ("group", "group", "str", ""),
    ("groupOverride", "group_override", "bool", False),
    ("groupWeight", "group_weight", "num", 100),
    ("useGroupScoring", "use_group_scoring", "opt_bool", None),
    ("scanDepth", "scan_depth", "opt_int", None),
    ("caseSensitive", "case_sensitive", "opt_bool", None),
    ("matchWholeWords", "match_whole_words", "opt_bool", None),
    ("matchPersonaDescription", "match_persona_description", "bool", False),
    ("matchCharacterDescription", "match_character_description", "bool", False),
    ("matchCharacterPersonality", "match_character_personality", "bool", False),
    ("matchCharacterDepthPrompt", "match_character_depth_prompt", "bool", False),
    ("matchScenario", "match_scenario", "bool", False),
    ("matchCreatorNotes", "match_creator_notes", "bool", False),
    ("sticky", "sticky", "timed", 0),
    ("cooldown", "cooldown", "timed", 0),
    ("delay", "delay", "timed", 0),
    ("triggers", "triggers", "list", []),
    ("automationId", "automation_id", "str", ""),
    ("displayIndex", "display_index", "opt_int", None),
]

# Behaviour-neutral fields: coercing them is not worth a warning.
QUIET = {"displayIndex", "addMemo", "comment", "automationId"}


def coerce(kind: Kind, value: Any, default: Any, uid: int, name: str, sink: Sink) -> Any:
    """Read ``value`` as SillyTavern's scanner would, warning when a present value had to be changed."""
    if value is MISSING:
        return default
    loud = name not in QUIET
    if kind == "bool":
        if not isinstance(value, bool) and value is not None and loud:
            sink.warn(uid, name, f"{value!r} is not a boolean; read as {truthy(value)} (JavaScript truthiness)")
        return truthy(value)
    if kind == "strict_bool":
        if not isinstance(value, bool) and value is not None and loud:
            sink.warn(
                uid, name, f"{value!r} is not a boolean; SillyTavern tests `=== true`, so read as {value is True}"
            )
        return value is True
    if kind == "opt_bool":
        return None if value is None else truthy(value)
    if kind == "str":
        if value is None:
            return default
        if not isinstance(value, str):
            if loud:
                sink.warn(uid, name, f"{value!r} is not text; converted to text")
            return str(value)
        return value
    if kind == "list":
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return list(value)
        if value is not None:
            sink.warn(uid, name, f"{value!r} is not a list of text; replaced by []")
        return []
    if kind == "level":
        if value is True:
            return 1
        if value is None or value is False:
            return 0
        parsed = number(value)
        if parsed is None or parsed < 0:
            sink.warn(uid, name, f"{value!r} is not a recursion level; read as 0 (off)")
            return 0
        return bounded(int(parsed), uid, name, sink)
    parsed = number(value)
    if value is None:
        return None if kind in ("opt_int",) else (0 if kind == "timed" else default)
    if parsed is None:
        if loud:
            sink.warn(uid, name, f"{value!r} is not a number; replaced by the default {default!r}")
        return default
    if kind == "num":
        return bounded(parsed, uid, name, sink)
    if not isinstance(parsed, int):
        if loud:
            sink.warn(uid, name, f"{value!r} is not a whole number; rounded down")
        parsed = int(parsed)
    if isinstance(value, str) and loud:
        sink.warn(uid, name, f"text {value!r} read as the number {parsed}")
    if kind == "timed" and parsed < 0:
        sink.warn(uid, name, f"negative {parsed} read as 0 (off)")
        return 0
    return bounded(parsed, uid, name, sink)


def bounded(parsed: int | float, uid: int | None, name: str, sink: Sink) -> int | float:
    """``parsed`` within +/- ``MAX_NUMBER`` (the model's bounds), warning when it was beyond."""
    if abs(parsed) <= MAX_NUMBER:
        return parsed
    bound = MAX_NUMBER if parsed > 0 else -MAX_NUMBER
    sink.warn(uid, name, f"{parsed!r} is beyond what a number field holds; set to {bound}")
    return bound
