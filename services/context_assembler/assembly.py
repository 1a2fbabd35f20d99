"""Pure context assembly: what was gathered (bot, persona, memories, retrieved messages, history) in, the
``mnemo.rpc.context.assemble.v1`` reply out. No I/O, so every budget rule is unit-tested directly.

Sections, in injection order: ``system``, ``persona``, ``lore``, ``knowledge``, ``memories``, ``retrieved``,
``history``. ``knowledge`` ("What <character> knows") holds only the speaking bot's own facts; ``memories``
holds summaries and legacy memories (summaries turned into lore).
Empty sections are left out. ``lore`` holds every placed activated entry in the engine's insertion order: for
now all SillyTavern positions (before/after the character, Author's Note, at-depth, example messages, outlets)
go into this one section. Every section's ``tokens`` is :func:`shared.tokens.estimate_tokens` of its rendered
text and ``token_count`` is their sum (the blank lines joining sections in ``context`` are not counted).

Budget (``max_tokens``), filled in priority order, whole items only (an item is never cut mid-text):

1. ``system`` and ``persona`` always go in full, even past the budget: without them the bot is not itself.
2. ``lore`` (activated entries, already within the engine's own World Info budget): constant entries first,
   then by ``order`` descending (SillyTavern's priority); an entry that does not fit is skipped. Lore is
   therefore shrunk last, after history, memories and retrieved; a constant entry left out is named in
   ``degraded`` as ``lore:<uid>`` (the book's author said it must always be there).
3. The newest ``min_history`` history messages (the immediate thread of the conversation).
4. ``knowledge``, in the order given (newest fact first); a fact that does not fit is skipped.
5. ``memories`` (summaries and legacy memories), best score first; an item that does not fit is skipped,
   smaller ones may fit.
6. ``retrieved`` (older messages of this conversation), best score first, same rule.
7. The rest of ``history``, newest to oldest.

History is therefore shrunk first and always from its oldest end: the kept history is a contiguous run of
the newest messages (filling stops at the first message that does not fit, so no gap opens in the
middle). Adding an item re-renders its section and re-estimates the section as a whole, and an item is only
accepted if the total stays within the budget, so the reply never exceeds ``max_tokens`` unless ``system``
and ``persona`` alone do. Dropping items for lack of room is normal operation, not degradation:
``degraded`` lists only parts that failed (unknown bot, index or embedder down, read model unreachable).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from services.context_assembler.items import (
    BotProfile,
    ChatLine,
    KnowledgeItem,
    LoreItem,
    MemoryItem,
    PersonaProfile,
)
from shared.events.contract import ContextAssembleReply, Section, Source
from shared.tokens import estimate_tokens

__all__ = [
    "AssemblyInput",
    "BotProfile",
    "ChatLine",
    "KnowledgeItem",
    "LoreItem",
    "MemoryItem",
    "PersonaProfile",
    "assemble",
    "reachable_history",
]

LORE_HEADER = "World and character lore:"
MEMORIES_HEADER = "Memories of earlier in this conversation:"
RETRIEVED_HEADER = "Earlier messages that may be relevant:"
HISTORY_HEADER = "Recent conversation:"

T = TypeVar("T")


@dataclass(frozen=True)
class AssemblyInput:
    bot_id: str
    bot: BotProfile | None
    persona: PersonaProfile | None
    memories: Sequence[MemoryItem] = ()
    retrieved: Sequence[ChatLine] = ()
    history: Sequence[ChatLine] = ()  # oldest first
    lore: Sequence[LoreItem] = ()  # insertion order
    knowledge: Sequence[KnowledgeItem] = ()  # newest first
    max_tokens: int = 8000
    min_history: int = 4
    degraded: Sequence[str] = field(default_factory=tuple)


# --- rendering ------------------------------------------------------------------------------------
def render_system(bot_id: str, bot: BotProfile | None) -> str:
    if bot is None:
        # Unknown bot (not recorded yet, or the read model failed): a neutral instruction, flagged degraded.
        return "You are a character in a roleplay conversation. Stay in character and answer the user."
    head = f"You are {bot.name}."
    prompt = bot.system_prompt.strip()
    return f"{head}\n{prompt}" if prompt else head


def render_persona(persona: PersonaProfile) -> str:
    lines = [f"The user plays as {persona.name}."]
    if persona.description.strip():
        lines.append(persona.description.strip())
    traits = [t.strip() for t in persona.traits if t.strip()]
    if traits:
        lines.append("Traits: " + ", ".join(traits) + ".")
    return "\n".join(lines)


def speaker(line: ChatLine) -> str:
    """``Name (role)`` when the author has a name, else the role alone."""
    name = line.author_name.strip()
    return f"{name} ({line.role})" if name else line.role


def knowledge_header(bot_id: str, bot: BotProfile | None) -> str:
    return f"What {bot.name if bot else bot_id} knows:"


def render_fact(item: KnowledgeItem) -> str:
    return f"- {item.text.strip()}"


def render_memory(item: MemoryItem) -> str:
    return f"- [{round(item.score * 100)}% relevant] {item.text.strip()}"


def render_line(line: ChatLine) -> str:
    return f"{speaker(line)}: {line.content.strip()}"


def render_retrieved(line: ChatLine) -> str:
    pct = f"[{round((line.score or 0.0) * 100)}% relevant] " if line.score is not None else ""
    return f"- {pct}{render_line(line)}"


def _block(header: str, lines: Sequence[str]) -> str:
    return "\n".join([header, *lines]) if lines else ""


# --- the budget -----------------------------------------------------------------------------------
class _Budget:
    """Tracks each section's rendered tokens; accepts an item only if the new total stays within budget."""

    def __init__(self, max_tokens: int, fixed_tokens: int) -> None:
        self.max_tokens = max_tokens
        self.fixed = fixed_tokens
        self.section_tokens: dict[str, int] = {}

    def total(self) -> int:
        return self.fixed + sum(self.section_tokens.values())

    def try_add(self, section: str, rendered_if_added: str) -> bool:
        new = estimate_tokens(rendered_if_added)
        old = self.section_tokens.get(section, 0)
        if self.total() - old + new > self.max_tokens:
            return False
        self.section_tokens[section] = new
        return True


def _fill_scored(
    budget: _Budget,
    section: str,
    header: str,
    items: Sequence[T],
    score: Callable[[T], float],
    render: Callable[[T], str],
) -> list[T]:
    """Best score first, skipping what does not fit; returns the kept items in input order."""
    kept: list[T] = []
    for item in sorted(items, key=score, reverse=True):
        candidate = [*kept, item]
        if budget.try_add(section, _block(header, [render(i) for i in _in_order(items, candidate)])):
            kept = candidate
    return _in_order(items, kept)


def _fill_in_order(
    budget: _Budget, section: str, header: str, items: Sequence[T], render: Callable[[T], str]
) -> list[T]:
    """In the given order, skipping what does not fit."""
    kept: list[T] = []
    for item in items:
        if budget.try_add(section, _block(header, [render(i) for i in [*kept, item]])):
            kept.append(item)
    return kept


def _fill_lore(budget: _Budget, items: Sequence[LoreItem]) -> tuple[list[LoreItem], list[str]]:
    """Constants first, then ``order`` descending; returns the kept items in insertion order and the
    ``lore:<uid>`` of constant entries that did not fit."""
    kept: list[LoreItem] = []
    missing: list[str] = []
    for item in sorted(items, key=lambda i: (not i.constant, -i.order)):
        candidate = [*kept, item]
        if budget.try_add("lore", _block(LORE_HEADER, [i.content for i in _in_order(items, candidate)])):
            kept = candidate
        elif item.constant:
            missing.append(f"lore:{item.uid}")
    return _in_order(items, kept), missing


def _in_order(items: Sequence[T], chosen: Sequence[T]) -> list[T]:
    ids = {id(c) for c in chosen}
    return [i for i in items if id(i) in ids]


def reachable_history(
    bot_id: str,
    bot: BotProfile | None,
    persona: PersonaProfile | None,
    history: Sequence[ChatLine],
    max_tokens: int,
    lore: Sequence[LoreItem] = (),
) -> list[ChatLine]:
    """The newest messages that could appear in the history section if it got all the room left after the
    system, persona and lore sections, oldest first. Older messages can never be shown as history, so retrieval
    searches among those only: a retrieved message then never duplicates a history line, and an early
    message is not hidden just because the loaded history window is larger than what fits."""
    fixed = estimate_tokens(render_system(bot_id, bot))
    if persona is not None:
        fixed += estimate_tokens(render_persona(persona))
    if lore:
        budget = _Budget(max_tokens, fixed)
        _fill_lore(budget, lore)
        fixed = budget.total()
    kept: list[ChatLine] = []
    for line in reversed(history):
        text = _block(HISTORY_HEADER, [render_line(h) for h in reversed([*kept, line])])
        if fixed + estimate_tokens(text) > max_tokens:
            break
        kept.append(line)
    kept.reverse()
    return kept


def assemble(inp: AssemblyInput) -> ContextAssembleReply:
    """Sections, sources and token count within ``inp.max_tokens`` (see the module docstring)."""
    degraded = list(dict.fromkeys(inp.degraded))
    system_text = render_system(inp.bot_id, inp.bot)
    persona_text = render_persona(inp.persona) if inp.persona is not None else ""
    budget = _Budget(inp.max_tokens, estimate_tokens(system_text) + estimate_tokens(persona_text))

    # Memories are shown chronologically; retrieved messages in conversation order.
    memories = sorted(inp.memories, key=lambda m: (m.first_index, m.summary_id))
    retrieved = sorted(inp.retrieved, key=lambda m: m.index)
    history = list(inp.history)

    kept_lore, lore_missing = _fill_lore(budget, inp.lore)
    degraded += [m for m in lore_missing if m not in degraded]
    kept_history: list[ChatLine] = []  # newest first while filling

    def fill_history(limit: int | None) -> bool:
        """Add history newest-first until ``limit`` messages are kept; False once one did not fit."""
        for line in reversed(history[: len(history) - len(kept_history)]):
            if limit is not None and len(kept_history) >= limit:
                return True
            text = _block(HISTORY_HEADER, [render_line(h) for h in reversed([*kept_history, line])])
            if not budget.try_add("history", text):
                return False
            kept_history.append(line)
        return True

    room = fill_history(max(0, inp.min_history))
    known_header = knowledge_header(inp.bot_id, inp.bot)
    kept_knowledge = _fill_in_order(budget, "knowledge", known_header, inp.knowledge, render_fact)
    kept_memories = _fill_scored(budget, "memories", MEMORIES_HEADER, memories, lambda m: m.score, render_memory)
    kept_retrieved = _fill_scored(
        budget, "retrieved", RETRIEVED_HEADER, retrieved, lambda m: m.score or 0.0, render_retrieved
    )
    if room:
        fill_history(None)
    kept_history.reverse()

    sections: list[Section] = [Section(name="system", text=system_text, tokens=estimate_tokens(system_text))]
    sources: list[Source] = [Source(kind="system", id=inp.bot_id)]
    if inp.persona is not None:
        sections.append(Section(name="persona", text=persona_text, tokens=estimate_tokens(persona_text)))
        sources.append(Source(kind="persona", id=inp.persona.persona_id))
    blocks = (
        ("lore", _block(LORE_HEADER, [i.content for i in kept_lore])),
        ("knowledge", _block(known_header, [render_fact(f) for f in kept_knowledge])),
        ("memories", _block(MEMORIES_HEADER, [render_memory(m) for m in kept_memories])),
        ("retrieved", _block(RETRIEVED_HEADER, [render_retrieved(r) for r in kept_retrieved])),
        ("history", _block(HISTORY_HEADER, [render_line(h) for h in kept_history])),
    )
    sections += [Section(name=n, text=t, tokens=estimate_tokens(t)) for n, t in blocks if t]
    sources += [Source(kind="lore", id=i.ident, detail=i.detail) for i in kept_lore]
    sources += [Source(kind="knowledge", id=f.fact_id, message_ids=list(f.message_ids)) for f in kept_knowledge]
    sources += [
        Source(kind=m.kind, id=m.summary_id, message_ids=list(m.message_ids), score=m.score) for m in kept_memories
    ]
    sources += [
        Source(kind="message", id=r.message_id, message_ids=[r.message_id], score=r.score) for r in kept_retrieved
    ]
    sources += [Source(kind="message", id=h.message_id, message_ids=[h.message_id]) for h in kept_history]
    return ContextAssembleReply(
        context="\n\n".join(s.text for s in sections),
        sections=sections,
        sources=sources,
        token_count=sum(s.tokens for s in sections),
        degraded=degraded,
    )
