"""A list section's estimated tokens, kept up to date item by item instead of re-counting the whole section.

Why by hand: :func:`mnemo.shared.tokens.estimate_tokens` of a section is ``max(chars / 4, words * 4 / 3, wide)``
rounded up, and each of the three is a sum over the section's lines: a section is its header and its lines
joined by ``"\n"`` (:func:`render.block`), the newline splits words and is neither a word nor a wide character,
and the wide pattern matches single characters. So the three sums, kept per section, give the very count that
re-rendering and counting the whole section gives, at the cost of counting the one new line: packing ``n``
items into a section was quadratic in ``n`` (issue 26: as much CPU as the gathering on a large context).

The ``system`` section is counted the same way: :func:`render.render_system` joins its non-empty parts with
newlines, so a lore entry placed before or after the character adds its own line to the text the section had
(packing ~9 such entries re-rendered and re-counted a system text of ~8,000 characters each time, about a third
of the assembly's CPU in ``make bench-context``).

Only :class:`EstimatedTokens` is counted this way (a tokenizer's count is not a sum over lines), and only for an
item that renders as one line of its section whatever else is kept: anything else (another counter, a lore
entry placed in the history or with no text, an item not in the request's own lists or in them twice) returns
None and the budget re-renders and counts the section as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mnemo.services.context_assembler.assemble.draft import Draft
from mnemo.services.context_assembler.assemble.render import (
    LEGACY_HEADER,
    LORE_HEADER,
    MEMORIES_HEADER,
    RETRIEVED_HEADER,
    knowledge_header,
    lore_section,
    render_fact,
    render_memory,
    render_remembered,
    render_retrieved,
)
from mnemo.services.context_assembler.items import (
    ChatLine,
    KnowledgeItem,
    LoreItem,
    RememberedItem,
    SummaryItem,
    remembered_section,
)
from mnemo.shared.tokens import EstimatedTokens, estimate_parts, tokens_of_parts


@dataclass(frozen=True)
class _Sums:
    """A section's header and kept lines, counted (:func:`estimate_parts`): the section is them joined by
    newlines. ``shown_bare``: the header counts without any line (the system text); a list section's header
    alone is left out (``render.block``)."""

    chars: int
    words: int
    wide: int
    lines: int = 0
    shown_bare: bool = False

    @classmethod
    def of(cls, text: str, *, shown_bare: bool = False) -> _Sums:
        return cls(*estimate_parts(text), shown_bare=shown_bare)

    def tokens(self) -> int:
        """:func:`estimate_tokens` of the header and the lines joined by newlines."""
        if not self.lines and not self.shown_bare:
            return 0  # "": the section left out
        return tokens_of_parts(self.chars + self.lines, self.words, self.wide)  # + the "\n"s

    def with_line(self, line: str) -> _Sums:
        chars, words, wide = estimate_parts(line)
        return _Sums(self.chars + chars, self.words + words, self.wide + wide, self.lines + 1, self.shown_bare)


class SectionTokens:
    """Per list section, the sums of its header and kept lines; :meth:`with_item` is the section's count with
    one more item, or None when that item cannot be counted on its own (then count the rendered section, and
    that section is counted whole from then on)."""

    def __init__(self, draft: Draft) -> None:
        self.draft = draft
        inp = draft.inp
        self.enabled = type(inp.counter) is EstimatedTokens
        self._sums: dict[str, _Sums] = {}
        self._given: dict[str, set[int]] = {}  # the ids in each of the request's lists (empty when one repeats)
        for name, items in (
            ("lore", inp.lore),
            ("knowledge", inp.knowledge),
            ("memories", inp.memories),
            ("retrieved", inp.retrieved),
            ("remembered", inp.remembered),
        ):
            ids = {id(i) for i in items}
            self._given[name] = ids if len(ids) == len(items) else set()
        self._kept: dict[str, set[int]] = {}
        self._off: set[str] = set()  # sections once counted whole: their sums would be stale
        self._pending: tuple[str, int, _Sums] | None = None

    def _line(self, section: str, kept: list[Any], item: Any) -> tuple[str, str] | None:
        """``item``'s line in ``section`` and the header, if it is one line there whatever else is kept."""
        d, given = self.draft, self._given
        if isinstance(item, RememberedItem):
            ok = kept is d.remembered and remembered_section(item) == section and id(item) in given["remembered"]
            return (render_remembered(item, section), self._header(section)) if ok else None
        if isinstance(item, LoreItem):
            if kept is not d.lore or section != lore_section(item) or id(item) not in given["lore"]:
                return None
            if section == "lore":
                return item.content, LORE_HEADER
            # In the system text an empty entry adds no line (its parts are joined only when not empty).
            return (item.content, "") if section == "system" and item.content else None
        if isinstance(item, KnowledgeItem):
            ok = kept is d.knowledge and section == "knowledge" and id(item) in given["knowledge"]
            return (render_fact(item), self._header(section)) if ok else None
        if isinstance(item, SummaryItem) and id(item) in given["memories"]:
            slot, name = (d.legacy, "legacy_memories") if item.kind == "legacy_memory" else (d.memories, "memories")
            return (render_memory(item), self._header(section)) if kept is slot and section == name else None
        if isinstance(item, ChatLine) and kept is d.retrieved and section == "retrieved":
            return (render_retrieved(item), RETRIEVED_HEADER) if id(item) in given["retrieved"] else None
        return None

    def _header(self, section: str) -> str:
        if section == "knowledge":
            return knowledge_header(self.draft.inp.bot_id, self.draft.inp.bot)
        headers = {"lore": LORE_HEADER, "memories": MEMORIES_HEADER, "legacy_memories": LEGACY_HEADER}
        return headers.get(section, RETRIEVED_HEADER)

    def with_item(self, section: str, kept: list[Any], item: Any) -> int | None:
        """The section's tokens with ``item`` added (recorded by :meth:`keep` if the budget keeps it)."""
        self._pending = None
        if not self.enabled or section in self._off:
            return None
        found = self._line(section, kept, item)
        if found is not None and section not in self._sums:
            if section == "system":  # never empty: counted from its text as it is (the lines add to it)
                self._sums[section] = _Sums.of(self.draft.render(section), shown_bare=True)
            elif not self.draft.render(section):
                # Counted from an empty section: one that holds items kept some other way is counted whole.
                self._sums[section] = _Sums.of(found[1])  # the header alone, no line yet: 0 tokens
        if found is None or section not in self._sums:
            self._off.add(section)
            return None
        sums = self._sums[section]
        if id(item) in self._kept.setdefault(section, set()):  # kept already: rendered once, no change
            return sums.tokens()
        new = sums.with_line(found[0])
        self._pending = (section, id(item), new)
        return new.tokens()

    def keep(self) -> None:
        """Record the item :meth:`with_item` last counted as kept."""
        if self._pending is not None:
            section, ident, new = self._pending
            self._sums[section] = new
            self._kept[section].add(ident)
            self._pending = None
