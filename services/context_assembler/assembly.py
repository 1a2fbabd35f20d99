"""Pure context assembly: what was gathered (bot, persona, lore, memories, knowledge, retrieved messages,
history) in, the ``mnemo.rpc.context.assemble.v1`` reply out. No I/O, so every budget rule is unit-tested.

Sections, in injection order (empty ones are left out):

- ``system``: "You are <name>.", the lore entries placed *before the character*, the bot's gender and age,
  its instructions, the lore entries placed *after the character*, its knowledge-sharing behaviour, and a
  note when the history shown holds more than one of the user's personas (a persona switch).
- ``persona``: the active persona (name, description, traits) with the user's custom instructions for it.
- ``lore``: the other placed entries: Author's Note top, example messages top, example messages bottom,
  Author's Note bottom, outlets, each group in the engine's insertion order. mnemo has no Author's Note and no
  example messages of its own, so their positions become this section's top and bottom.
- ``legacy_memories``: the user's summaries turned into lore that apply to this bot or persona.
- ``memories``: summaries of this and past conversations, each with its relevance as a percentage.
- ``knowledge`` ("What <bot> knows"): only the speaking bot's own facts.
- ``retrieved``: older messages of this conversation found by search (relevance as a percentage). They sit
  just before ``history`` so the two read in conversation order: what was said long ago, then recently.
- ``history``: the most recent messages, oldest first, each labelled ``Name (role)``; a user message written
  as a persona is labelled ``<persona name> (user persona)``. Lore entries placed *at depth* are inserted here,
  ``depth`` messages before the end (0 = after the last message), as ``[<role>] <content>``.

``messages`` is the same context for a chat-completions API: one ``system`` message holding every section
but ``history`` (joined by blank lines), then the history as ``user``/``assistant`` messages, with the
at-depth lore entries as messages of their own role at their depth. A user message carries its persona label
(``Tobin: ...``); the speaking bot's own messages are sent as written, another bot's with its name
(``Oren: ...``); narrator and system lines become ``system`` messages.

Every section's ``tokens`` is the ``counter``'s count of its rendered text (the configured LLM's tokenizer,
or :func:`shared.tokens.estimate_tokens`) and ``token_count`` their sum; the blank lines joining sections and
the chat messages' framing are not counted.

Budget (``max_tokens``), filled in priority order, whole items only (an item is never cut mid-text):

1. ``system`` (without its lore) and ``persona`` always go in full, even past the budget.
2. Constant lore entries (the book's author said they must always be there), in ``order`` descending.
3. The speaking bot's knowledge, in the order given (the facts most relevant to the request first, then the
   newest).
4. The other lore entries, ``order`` descending (SillyTavern's priority).
5. The newest ``min_history`` history messages (the immediate thread of the conversation).
6. Legacy memories, best score first.
7. Memories, best score first.
8. Retrieved messages, best score first.
9. The rest of the history, newest to oldest.

So when the context is over budget it shrinks in reverse: history first (down to the newest
``min_history``), then retrieved, memories, legacy memories, the newest ``min_history`` messages, lore, and
last the knowledge and the constant lore. ``min_history=0`` gives the strict order history, memories, legacy
memories, lore. An item that does not fit is skipped and smaller ones after it may still fit, except in
history, which is always a contiguous run of the newest messages (filling stops at the first message that
does not fit). Adding an item re-renders its section and counts it as a whole, and an item is only accepted
if the total stays within the budget, so the reply never exceeds ``max_tokens`` unless ``system`` and
``persona`` alone do. A message shown in ``history`` is dropped from ``retrieved``.

Dropping items for lack of room is normal operation and not reported, except for what must never go
silently: a constant lore entry left out is named in ``degraded`` as ``lore:<uid>``, a fact of the speaking
bot as ``knowledge:<fact_id>`` (the first five; beyond them ``knowledge:+<n>`` counts the rest). The other
``degraded`` entries come from gathering (unknown bot, index or embedder down, a read model unreachable).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from services.context_assembler.items import (
    BotProfile,
    ChatLine,
    KnowledgeItem,
    LoreItem,
    MemoryItem,
    PersonaProfile,
)
from shared.events.contract import ChatMessage, ContextAssembleReply, Section, Source
from shared.tokens import EstimatedTokens, TokenCounter

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
LEGACY_HEADER = "Long-term memories:"
MEMORIES_HEADER = "Memories of past conversations:"
RETRIEVED_HEADER = "Earlier messages that may be relevant:"
HISTORY_HEADER = "Recent conversation:"
SECTION_ORDER = ("system", "persona", "lore", "legacy_memories", "memories", "knowledge", "retrieved", "history")
KNOWLEDGE_NAMED = 5  # facts named one by one in ``degraded``; the rest are counted

SHARING = {
    "open": "{name} shares what they know freely when asked.",
    "guarded": "{name} shares what they know only with those they trust, and only when it serves them.",
    "secretive": "{name} keeps what they know to themselves unless pressed hard.",
}
BEFORE_CHAR, AFTER_CHAR, AN_TOP, AN_BOTTOM, AT_DEPTH, EM_TOP, EM_BOTTOM, OUTLET = range(8)
LORE_SECTION_RANK = {AN_TOP: 0, EM_TOP: 1, EM_BOTTOM: 2, AN_BOTTOM: 3, OUTLET: 4}
ChatRole = Literal["system", "user", "assistant"]
LORE_ROLES: dict[int, ChatRole] = {0: "system", 1: "user", 2: "assistant"}

T = TypeVar("T")


@dataclass(frozen=True)
class AssemblyInput:
    bot_id: str
    bot: BotProfile | None
    persona: PersonaProfile | None
    memories: Sequence[MemoryItem] = ()  # summaries and legacy memories (``kind``)
    retrieved: Sequence[ChatLine] = ()
    history: Sequence[ChatLine] = ()  # oldest first
    lore: Sequence[LoreItem] = ()  # insertion order
    knowledge: Sequence[KnowledgeItem] = ()  # most relevant first, then newest
    max_tokens: int = 8000
    min_history: int = 4
    degraded: Sequence[str] = field(default_factory=tuple)
    counter: TokenCounter = field(default_factory=EstimatedTokens)


# --- rendering ------------------------------------------------------------------------------------
def render_system(
    bot_id: str,
    bot: BotProfile | None,
    before: Sequence[str] = (),
    after: Sequence[str] = (),
    note: str = "",
) -> str:
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


def render_depth_lore(item: LoreItem) -> str:
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


def chat_message(line: ChatLine, bot_id: str) -> ChatMessage:
    content = line.content.strip()
    if line.role == "assistant":
        mine = line.author_id in (None, bot_id) or not line.author_name.strip()
        return ChatMessage(role="assistant", content=content if mine else f"{line.author_name.strip()}: {content}")
    if line.role == "user":
        name = persona_label(line) or line.author_name.strip()
        return ChatMessage(role="user", content=f"{name}: {content}" if name else content)
    return ChatMessage(role="system", content=render_line(line) if line.role == "narrator" else content)


def _block(header: str, lines: Sequence[str]) -> str:
    return "\n".join([header, *lines]) if lines else ""


def _in_order(items: Sequence[T], chosen: Sequence[T]) -> list[T]:
    ids = {id(c) for c in chosen}
    return [i for i in items if id(i) in ids]


# --- the draft: what is kept so far, rendered per section ------------------------------------------
@dataclass
class _Draft:
    inp: AssemblyInput
    note_names: list[str]
    lore: list[LoreItem] = field(default_factory=list)
    knowledge: list[KnowledgeItem] = field(default_factory=list)
    legacy: list[MemoryItem] = field(default_factory=list)
    memories: list[MemoryItem] = field(default_factory=list)
    retrieved: list[ChatLine] = field(default_factory=list)
    history: list[ChatLine] = field(default_factory=list)  # newest first while filling

    def kept_lore(self, section: str) -> list[LoreItem]:
        return [i for i in _in_order(self.inp.lore, self.lore) if lore_section(i) == section]

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
            return _block(LORE_HEADER, [i.content for i in placed])
        if section == "legacy_memories":
            return _block(LEGACY_HEADER, [render_memory(m) for m in self.legacy_in_order()])
        if section == "memories":
            return _block(MEMORIES_HEADER, [render_memory(m) for m in self.memories_in_order()])
        if section == "knowledge":
            header = knowledge_header(inp.bot_id, inp.bot)
            return _block(header, [render_fact(f) for f in _in_order(inp.knowledge, self.knowledge)])
        if section == "retrieved":
            return _block(RETRIEVED_HEADER, [render_retrieved(r) for r in self.retrieved_in_order()])
        if section == "history":
            entries = interleave(self.history_oldest_first(), self.kept_lore("history"))
            lines = [render_depth_lore(e) if isinstance(e, LoreItem) else render_line(e) for e in entries]
            return _block(HISTORY_HEADER, lines)
        raise ValueError(section)

    def legacy_in_order(self) -> list[MemoryItem]:
        return _in_order([m for m in self.inp.memories if m.kind == "legacy_memory"], self.legacy)

    def memories_in_order(self) -> list[MemoryItem]:
        # Shown chronologically.
        memories = sorted((m for m in self.inp.memories if m.kind != "legacy_memory"), key=_chronological)
        return _in_order(memories, self.memories)

    def retrieved_in_order(self) -> list[ChatLine]:
        return _in_order(sorted(self.inp.retrieved, key=lambda m: m.index), self.retrieved)


def _chronological(m: MemoryItem) -> tuple[int, str]:
    return (m.first_index, m.summary_id)


class _Budget:
    """Tracks each section's tokens; accepts a change only if the new total stays within budget."""

    def __init__(self, draft: _Draft) -> None:
        self.draft = draft
        self.count = draft.inp.counter.count
        self.section_tokens = {s: self.count(draft.render(s)) for s in ("system", "persona")}

    def total(self) -> int:
        return sum(self.section_tokens.values())

    def offer(self, section: str, kept: list[T], item: T) -> bool:
        """Append ``item`` to ``kept`` if ``section`` re-rendered with it still fits; False (and ``kept``
        unchanged) otherwise."""
        kept.append(item)
        new = self.count(self.draft.render(section))
        if self.total() - self.section_tokens.get(section, 0) + new > self.draft.inp.max_tokens:
            kept.pop()
            return False
        self.section_tokens[section] = new
        return True

    def fill_scored(self, section: str, kept: list[T], items: Sequence[T], score: Callable[[T], float]) -> None:
        """Best score first, skipping what does not fit."""
        for item in sorted(items, key=score, reverse=True):
            self.offer(section, kept, item)

    def fill_history(self, limit: int | None) -> bool:
        """Add history newest-first until ``limit`` messages are kept; False once one did not fit."""
        history = self.draft.inp.history
        kept = self.draft.history
        for line in reversed(history[: len(history) - len(kept)]):
            if limit is not None and len(kept) >= limit:
                return True
            if not self.offer("history", kept, line):
                return False
        return True


def _lore_priority(items: Sequence[LoreItem]) -> list[LoreItem]:
    return sorted(items, key=lambda i: -i.order)


def _start(inp: AssemblyInput) -> _Budget:
    # The persona note is reserved for every persona of the loaded window; names whose lines end up cut are
    # removed at the end, which only shortens the system text.
    return _Budget(_Draft(inp, personas_in(inp.history)))


def reachable_history(
    bot_id: str,
    bot: BotProfile | None,
    persona: PersonaProfile | None,
    history: Sequence[ChatLine],
    max_tokens: int,
    lore: Sequence[LoreItem] = (),
    counter: TokenCounter | None = None,
) -> list[ChatLine]:
    """The newest messages that could appear in the history section if it got all the room left after the
    system, persona and lore, oldest first. Older messages can never be shown as history, so retrieval
    searches among those only: a retrieved message then rarely duplicates a history line (``assemble`` drops
    one that does), and an early message is not hidden just because the loaded window is larger than what
    fits."""
    inp = AssemblyInput(
        bot_id, bot, persona, history=history, lore=lore, max_tokens=max_tokens, counter=counter or EstimatedTokens()
    )
    budget = _start(inp)
    for item in _lore_priority([i for i in lore if i.constant]) + _lore_priority([i for i in lore if not i.constant]):
        budget.offer(lore_section(item), budget.draft.lore, item)
    budget.fill_history(None)
    return budget.draft.history_oldest_first()


def assemble(inp: AssemblyInput) -> ContextAssembleReply:
    """Sections, chat messages, sources and token count within ``inp.max_tokens`` (see the module docstring)."""
    degraded = list(dict.fromkeys(inp.degraded))
    budget = _start(inp)
    draft = budget.draft

    for item in _lore_priority([i for i in inp.lore if i.constant]):
        if not budget.offer(lore_section(item), draft.lore, item):
            degraded.append(f"lore:{item.uid}")
    missing_facts = [f.fact_id for f in inp.knowledge if not budget.offer("knowledge", draft.knowledge, f)]
    degraded += [f"knowledge:{fid}" for fid in missing_facts[:KNOWLEDGE_NAMED]]
    if len(missing_facts) > KNOWLEDGE_NAMED:
        degraded.append(f"knowledge:+{len(missing_facts) - KNOWLEDGE_NAMED}")
    for item in _lore_priority([i for i in inp.lore if not i.constant]):
        budget.offer(lore_section(item), draft.lore, item)
    room = budget.fill_history(max(0, inp.min_history))
    legacy = [m for m in inp.memories if m.kind == "legacy_memory"]
    budget.fill_scored("legacy_memories", draft.legacy, legacy, lambda m: m.score)
    summaries = [m for m in inp.memories if m.kind != "legacy_memory"]
    budget.fill_scored("memories", draft.memories, summaries, lambda m: m.score)
    budget.fill_scored("retrieved", draft.retrieved, inp.retrieved, lambda m: m.score or 0.0)
    if room:
        budget.fill_history(None)
    shown = {h.message_id for h in draft.history}
    draft.retrieved = [r for r in draft.retrieved if r.message_id not in shown]
    draft.note_names = personas_in(draft.history_oldest_first())
    return _reply(draft, list(dict.fromkeys(degraded)))


def _reply(draft: _Draft, degraded: list[str]) -> ContextAssembleReply:
    inp = draft.inp
    count = inp.counter.count
    texts = {name: draft.render(name) for name in SECTION_ORDER}
    sections = [Section(name=n, text=t, tokens=count(t)) for n, t in texts.items() if t or n == "system"]

    history = draft.history_oldest_first()
    sources: list[Source] = [Source(kind="system", id=inp.bot_id)]
    if inp.persona is not None:
        sources.append(Source(kind="persona", id=inp.persona.persona_id))
    sources += [Source(kind="lore", id=i.ident, detail=i.detail) for i in _in_order(inp.lore, draft.lore)]
    sources += [
        Source(kind=m.kind, id=m.summary_id, message_ids=list(m.message_ids), score=m.score)
        for m in [*draft.legacy_in_order(), *draft.memories_in_order()]
    ]
    sources += [
        Source(kind="knowledge", id=f.fact_id, message_ids=list(f.message_ids))
        for f in _in_order(inp.knowledge, draft.knowledge)
    ]
    sources += [
        Source(kind="message", id=r.message_id, message_ids=[r.message_id], score=r.score)
        for r in draft.retrieved_in_order()
    ]
    sources += [Source(kind="message", id=h.message_id, message_ids=[h.message_id]) for h in history]

    messages = [ChatMessage(role="system", content="\n\n".join(s.text for s in sections if s.name != "history"))]
    for entry in interleave(history, draft.kept_lore("history")):
        if isinstance(entry, LoreItem):
            messages.append(ChatMessage(role=LORE_ROLES.get(entry.role, "system"), content=entry.content))
        else:
            messages.append(chat_message(entry, inp.bot_id))
    return ContextAssembleReply(
        context="\n\n".join(s.text for s in sections),
        sections=sections,
        sources=sources,
        token_count=sum(s.tokens for s in sections),
        degraded=degraded,
        messages=messages,
    )
