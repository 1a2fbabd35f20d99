"""What the assembly works on: its input, and the draft of what is kept so far, rendered per section.

The budget (:mod:`mnemo.services.context_assembler.assemble.budget`) adds items to a :class:`Draft` one at a time and
re-renders the section each one goes to; the reply is built from the final draft.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from mnemo.services.context_assembler.assemble.render import (
    AFTER_CHAR,
    BEFORE_CHAR,
    HISTORY_HEADER,
    LEGACY_HEADER,
    LORE_HEADER,
    LORE_SECTION_RANK,
    MEMORIES_HEADER,
    RETRIEVED_HEADER,
    block,
    interleave,
    knowledge_header,
    lore_section,
    persona_note,
    render_depth_lore,
    render_fact,
    render_line,
    render_memory,
    render_persona,
    render_remembered,
    render_retrieved,
    render_system,
)
from mnemo.services.context_assembler.items import (
    BotProfile,
    ChatLine,
    KnowledgeItem,
    LoreItem,
    PersonaProfile,
    RememberedItem,
    SummaryItem,
    remembered_section,
)
from mnemo.shared.tokens import EstimatedTokens, TokenCounter

T = TypeVar("T")


@dataclass(frozen=True)
class AssemblyInput:
    bot_id: str
    bot: BotProfile | None
    persona: PersonaProfile | None
    memories: Sequence[SummaryItem] = ()  # summaries and legacy memories (``kind``)
    retrieved: Sequence[ChatLine] = ()
    history: Sequence[ChatLine] = ()  # oldest first
    lore: Sequence[LoreItem] = ()  # insertion order
    knowledge: Sequence[KnowledgeItem] = ()  # most relevant first, then newest
    remembered: Sequence[RememberedItem] = ()  # the memory API's, best first (``recall/remembered.py``)
    max_tokens: int = 8000
    directive: bool = False  # offer the ``directive`` section (the gatherer: from the request, else the settings)
    min_history: int = 4
    degraded: Sequence[str] = field(default_factory=tuple)
    counter: TokenCounter = field(default_factory=EstimatedTokens)


def in_order(items: Sequence[T], chosen: Sequence[T]) -> list[T]:
    """The ``chosen`` items (by identity) in the order of ``items``."""
    ids = {id(c) for c in chosen}
    return [i for i in items if id(i) in ids]


@dataclass
class Draft:
    inp: AssemblyInput
    note_names: list[str]
    lore: list[LoreItem] = field(default_factory=list)
    knowledge: list[KnowledgeItem] = field(default_factory=list)
    legacy: list[SummaryItem] = field(default_factory=list)
    memories: list[SummaryItem] = field(default_factory=list)
    retrieved: list[ChatLine] = field(default_factory=list)
    directive: list[str] = field(default_factory=list)  # the knowledge rule, once the budget took it
    remembered: list[RememberedItem] = field(default_factory=list)
    history: list[ChatLine] = field(default_factory=list)  # newest first while filling

    def kept_lore(self, section: str) -> list[LoreItem]:
        return [i for i in in_order(self.inp.lore, self.lore) if lore_section(i) == section]

    def history_oldest_first(self) -> list[ChatLine]:
        return list(reversed(self.history))

    def render(self, section: str) -> str:
        inp = self.inp
        if section == "system":
            placed = self.kept_lore("system")
            return render_system(
                inp.bot_id,
                inp.bot,
                [i.content for i in placed if i.position == BEFORE_CHAR],
                [i.content for i in placed if i.position == AFTER_CHAR],
                persona_note(self.note_names, inp.persona),
            )
        if section == "persona":
            return render_persona(inp.persona) if inp.persona is not None else ""
        if section == "lore":
            placed = sorted(self.kept_lore("lore"), key=lambda i: LORE_SECTION_RANK.get(i.position, 4))
            return block(LORE_HEADER, [i.content for i in placed] + self._remembered_lines("lore"))
        if section == "legacy_memories":
            return block(LEGACY_HEADER, [render_memory(m) for m in self.legacy_in_order()])
        if section == "memories":
            lines = [render_memory(m) for m in self.memories_in_order()] + self._remembered_lines("memories")
            return block(MEMORIES_HEADER, lines)
        if section == "knowledge":
            header = knowledge_header(inp.bot_id, inp.bot)
            facts = [render_fact(f) for f in in_order(inp.knowledge, self.knowledge)]
            return block(header, facts + self._remembered_lines("knowledge"))
        if section == "directive":
            return "\n".join(self.directive)
        if section == "retrieved":
            return block(RETRIEVED_HEADER, [render_retrieved(r) for r in self.retrieved_in_order()])
        if section == "history":
            entries = interleave(self.history_oldest_first(), self.kept_lore("history"))
            lines = [render_depth_lore(e) if isinstance(e, LoreItem) else render_line(e) for e in entries]
            return block(HISTORY_HEADER, lines)
        raise ValueError(section)

    def legacy_in_order(self) -> list[SummaryItem]:
        return in_order([m for m in self.inp.memories if m.kind == "legacy_memory"], self.legacy)

    def memories_in_order(self) -> list[SummaryItem]:
        # Shown chronologically.
        memories = sorted((m for m in self.inp.memories if m.kind != "legacy_memory"), key=_chronological)
        return in_order(memories, self.memories)

    def remembered_in_order(self, section: str) -> list[RememberedItem]:
        """The kept remembered memories of ``section``, after that section's own items: the lore's and the
        knowledge's best first, the memories' oldest first (as the summaries, chronologically)."""
        kept = [m for m in in_order(self.inp.remembered, self.remembered) if remembered_section(m) == section]
        if section == "memories":
            kept.sort(key=lambda m: (m.occurred_at.timestamp() if m.occurred_at else 0.0, m.memory_id))
        return kept

    def _remembered_lines(self, section: str) -> list[str]:
        return [render_remembered(m, section) for m in self.remembered_in_order(section)]

    def retrieved_in_order(self) -> list[ChatLine]:
        return in_order(sorted(self.inp.retrieved, key=lambda m: m.index), self.retrieved)


def _chronological(m: SummaryItem) -> tuple[int, str]:
    return (m.first_index, m.summary_id)
