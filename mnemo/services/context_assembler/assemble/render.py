"""The text of each piece of the context: section headers, the system and persona texts, one line per memory,
fact or message, and where a lore entry's position puts it. Pure functions, no budget.

Sections, in injection order (:data:`SECTION_ORDER`; each renderer below documents what its section says).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from mnemo.services.context_assembler.items import (
    BotProfile,
    ChatLine,
    KnowledgeItem,
    LoreItem,
    PersonaProfile,
    RememberedItem,
    SummaryItem,
)

LORE_HEADER = "World and character lore:"
LEGACY_HEADER = "Long-term memories:"
MEMORIES_HEADER = "Memories of past conversations:"
RETRIEVED_HEADER = "Earlier messages that may be relevant:"
HISTORY_HEADER = "Recent conversation:"
# ``retrieved`` (older messages of this conversation found by search) sits just before ``history`` so the two
# read in conversation order: what was said long ago, then recently.
# ``directive`` follows what the bot knows: the rule reads right after the facts it is about.
SECTION_ORDER = (
    "system", "persona", "lore", "legacy_memories", "memories", "knowledge", "directive", "retrieved", "history",
)  # fmt: skip

SHARING = {
    "open": "{name} shares what they know freely when asked.",
    "guarded": "{name} shares what they know only with those they trust, and only when it serves them.",
    "secretive": "{name} keeps what they know to themselves unless pressed hard.",
}
BEFORE_CHAR, AFTER_CHAR, AN_TOP, AN_BOTTOM, AT_DEPTH, EM_TOP, EM_BOTTOM, OUTLET = range(8)
# The ``lore`` section holds the placed entries neither in ``system`` nor at depth: Author's Note top, example
# messages top, example messages bottom, Author's Note bottom, outlets, each group in the engine's insertion
# order. mnemo has no Author's Note and no example messages of its own, so their positions become this
# section's top and bottom.
LORE_SECTION_RANK = {AN_TOP: 0, EM_TOP: 1, EM_BOTTOM: 2, AN_BOTTOM: 3, OUTLET: 4}
ChatRole = Literal["system", "user", "assistant"]
LORE_ROLES: dict[int, ChatRole] = {0: "system", 1: "user", 2: "assistant"}


def render_system(
    bot_id: str,
    bot: BotProfile | None,
    before: Sequence[str] = (),
    after: Sequence[str] = (),
    note: str = "",
) -> str:
    """The ``system`` section: "You are <name>.", the lore entries placed *before the character*, the bot's
    gender and age, its instructions, the lore entries placed *after the character*, its knowledge-sharing
    behaviour, and ``note`` (:func:`persona_note`, when the history shown holds a persona switch)."""
    if bot is None:
        # Unknown bot (not recorded yet, or the read model failed): a neutral instruction, flagged degraded.
        head = "You are a character in a roleplay conversation. Stay in character and answer the user."
        return "\n".join(p for p in (head, *before, *after, note) if p)
    about = []
    if bot.gender and bot.gender.strip():
        about.append(f"Gender: {bot.gender.strip()}.")
    if bot.age and bot.age.strip():
        about.append(f"Age: {bot.age.strip()}.")
    sharing = SHARING.get(bot.knowledge_sharing or "", "").format(name=bot.name)
    parts = (f"You are {bot.name}.", *before, " ".join(about), bot.system_prompt.strip(), *after, sharing, note)
    return "\n".join(p for p in parts if p)


def render_persona(persona: PersonaProfile) -> str:
    """The ``persona`` section: the active persona (name, description, traits) with the user's custom
    instructions for it."""
    lines = [f"The user plays as {persona.name}."]
    if persona.description.strip():
        lines.append(persona.description.strip())
    traits = [t.strip() for t in persona.traits if t.strip()]
    if traits:
        lines.append("Traits: " + ", ".join(traits) + ".")
    if persona.instructions.strip():
        lines.append(f"The user's instructions while playing {persona.name}:\n{persona.instructions.strip()}")
    return "\n".join(lines)


def persona_label(line: ChatLine) -> str:
    """The name of the persona that wrote a user message, or "" for a line written as no persona."""
    if line.role != "user" or not line.persona_id:
        return ""
    return line.persona_name.strip() or line.author_name.strip() or line.persona_id


def personas_in(history: Sequence[ChatLine]) -> list[str]:
    """The persona names of the user's lines, in order of first appearance."""
    return list(dict.fromkeys(label for line in history if (label := persona_label(line))))


def persona_note(names: Sequence[str], persona: PersonaProfile | None) -> str:
    """The ``system`` note of a persona switch: said when the history shown holds more than one persona."""
    if len(names) < 2:
        return ""
    now = f" The user now plays as {persona.name}." if persona is not None else ""
    return (
        f"The user has played more than one persona in this conversation ({', '.join(names)}); each of the "
        f"user's messages is labelled with the persona that wrote it.{now}"
    )


def speaker(line: ChatLine) -> str:
    """``<persona> (user persona)`` for a message written as a persona, ``Name (role)`` when the author has a
    name, else the role alone."""
    label = persona_label(line)
    if label:
        return f"{label} (user persona)"
    name = line.author_name.strip()
    return f"{name} ({line.role})" if name else line.role


def knowledge_header(bot_id: str, bot: BotProfile | None) -> str:
    """The ``knowledge`` section ("What <bot> knows") holds only the speaking bot's own facts."""
    return f"What {bot.name if bot else bot_id} knows:"


def render_directive(bot_id: str, bot: BotProfile | None) -> str:
    """The ``directive`` section: the individual-knowledge rule for the speaking bot (issue 28): its reply stays
    consistent with what it knows, and it meets what it does not know with ignorance, curiosity or confusion."""
    name = bot.name if bot else bot_id
    return (
        f"Knowledge rule: {name}'s response MUST be consistent with what {name} knows. On a topic {name} has no "
        f"specific knowledge of, {name} reacts with ignorance, curiosity or confusion."
    )


def render_fact(item: KnowledgeItem) -> str:
    return f"- {item.text.strip()}"


def render_memory(item: SummaryItem) -> str:
    """A line of ``memories`` (summaries of this and past conversations) or ``legacy_memories`` (the user's
    summaries turned into lore that apply to this bot or persona), with its relevance as a percentage."""
    return f"- [{round(item.score * 100)}% relevant] {item.text.strip()}"


def render_remembered(item: RememberedItem, section: str) -> str:
    """A line of a memory written through the memory API, in the section of its type: beside the summaries with
    its relevance as they have it, beside the lore and the facts as a plain line, as theirs are."""
    if section == "memories":
        return f"- [{round(item.score * 100)}% relevant] {item.text}"
    return f"- {item.text}"


def render_line(line: ChatLine) -> str:
    """A ``history`` line: the most recent messages, oldest first, each labelled by :func:`speaker`."""
    return f"{speaker(line)}: {line.content.strip()}"


def render_retrieved(line: ChatLine) -> str:
    """A ``retrieved`` line: an older message found by search, with its relevance as a percentage."""
    pct = f"[{round((line.score or 0.0) * 100)}% relevant] " if line.score is not None else ""
    return f"- {pct}{render_line(line)}"


def render_depth_lore(item: LoreItem) -> str:
    """A lore entry placed *at depth*, among the ``history`` lines (see :func:`interleave`)."""
    return f"[{LORE_ROLES.get(item.role, 'system')}] {item.content}"


def lore_section(item: LoreItem) -> str:
    """The section an entry's position puts it in."""
    if item.position in (BEFORE_CHAR, AFTER_CHAR):
        return "system"
    return "history" if item.position == AT_DEPTH else "lore"


def interleave(lines: Sequence[ChatLine], depth_lore: Sequence[LoreItem]) -> list[ChatLine | LoreItem]:
    """History lines (oldest first) with each at-depth entry ``depth`` lines before the end (0 = at the end;
    deeper than the history = at the start), entries at the same place in their given order."""
    at: dict[int, list[LoreItem]] = {}
    for item in depth_lore:
        at.setdefault(max(0, len(lines) - max(0, item.depth)), []).append(item)
    out: list[ChatLine | LoreItem] = []
    for i, line in enumerate(lines):
        out += at.get(i, [])
        out.append(line)
    out += at.get(len(lines), [])
    return out


def block(header: str, lines: Sequence[str]) -> str:
    """A section's text: its header then its lines; "" (the section left out) when it has no lines."""
    return "\n".join([header, *lines]) if lines else ""
