"""NovelAI, Agnai and RisuAI lorebooks, converted as SillyTavern's client-side `importWorldInfo` does (spec §7).

Every converted entry starts from the template defaults with uid = display index = array index and no secondary
keys unless the source has them. Source fields SillyTavern ignores (NovelAI `forceActivation`, Risu `mode` and
`useRegex`) are ignored here too, with a warning so the user knows.
"""

from __future__ import annotations

from typing import Any

from mnemo.services.lore.formats.convert import MalformedFileError, Sink, number, objects, string_list, truthy
from mnemo.services.lore.formats.fields import bounded
from mnemo.shared.lore.model import Lorebook, LoreEntry


def _entries(doc: dict[str, Any], field: str, what: str) -> list[Any]:
    entries = doc.get(field)
    if not isinstance(entries, list):
        raise MalformedFileError(f"{what}: `{field}` must be a list")
    return entries


def _bounded(raw: dict[str, Any], field: str, uid: int, sink: Sink, *, default: int) -> int | float:
    """A numeric field clamped to its range (with a warning when it was out of it), or ``default`` when absent."""
    value = number(raw.get(field))
    return bounded(value, uid, field, sink) if value is not None else default


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def read_novelai(doc: dict[str, Any], name: str, sink: Sink) -> Lorebook:
    out: list[LoreEntry] = []
    for i, raw in objects(_entries(doc, "entries", "NovelAI lorebook"), "entries", sink):
        config: dict[str, Any] = raw["contextConfig"] if isinstance(raw.get("contextConfig"), dict) else {}
        if raw.get("forceActivation"):
            sink.warn(i, "forceActivation", "ignored, as SillyTavern does: the entry is not constant")
        display = _text(raw.get("displayName"))
        out.append(
            LoreEntry(
                uid=i,
                display_index=i,
                key=string_list(raw.get("keys"), i, "keys", sink),
                content=_text(raw.get("text")),
                comment=display,
                add_memo=bool(display.strip()),
                disable=not truthy(raw.get("enabled")),
                order=_bounded(config, "budgetPriority", i, sink, default=0),
                position=0,
                selective=False,
            )
        )
    return Lorebook(name=name, entries=out, source_format="novelai")


def read_agnai(doc: dict[str, Any], name: str, sink: Sink) -> Lorebook:
    out: list[LoreEntry] = []
    for i, raw in objects(_entries(doc, "entries", "Agnai memory book"), "entries", sink):
        weight = number(raw.get("weight"))
        if raw.get("priority") not in (None, weight):
            sink.warn(i, "priority", "ignored, as SillyTavern does: order comes from `weight`")
        title = _text(raw.get("name"))
        out.append(
            LoreEntry(
                uid=i,
                display_index=i,
                key=string_list(raw.get("keywords"), i, "keywords", sink),
                content=_text(raw.get("entry")),
                comment=title,
                add_memo=bool(title),
                order=_bounded(raw, "weight", i, sink, default=0),
                disable=not truthy(raw.get("enabled")),
                position=0,
                selective=False,
            )
        )
    book_name = _text(doc.get("name")) or name
    return Lorebook(name=book_name, description=_text(doc.get("description")), entries=out, source_format="agnai")


def read_risu(doc: dict[str, Any], name: str, sink: Sink) -> Lorebook:
    out: list[LoreEntry] = []
    for i, raw in objects(_entries(doc, "data", "RisuAI lorebook"), "data", sink):
        if raw.get("mode") == "folder":
            sink.warn(i, "mode", "a Risu folder, imported as an entry as SillyTavern does (it has no keys to match)")
        if raw.get("useRegex"):
            sink.warn(i, "useRegex", "ignored, as SillyTavern does: Risu regexes have no slashes and stay plain text")
        out.append(
            LoreEntry(
                uid=i,
                display_index=i,
                key=_split(raw.get("key")),
                keysecondary=_split(raw.get("secondkey")),
                comment=_text(raw.get("comment")),
                content=_text(raw.get("content")),
                constant=truthy(raw.get("alwaysActive")),
                selective=truthy(raw.get("selective")),
                order=_bounded(raw, "insertorder", i, sink, default=100),
                position=0,
                # SillyTavern stores `useProbability = activationPercent ?? true` (a number); truthy either way
                # unless the percent is 0, which also means "never" as a probability.
                probability=_bounded(raw, "activationPercent", i, sink, default=100),
                use_probability=True,
                add_memo=True,
            )
        )
    return Lorebook(name=name, entries=out, source_format="risu")


def _split(value: Any) -> list[str]:
    if not isinstance(value, str) or not value.strip():
        return []
    return [part.strip() for part in value.split(",")]
