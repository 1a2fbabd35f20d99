"""Pure context assembly: what was gathered (bot, persona, lore, memories, knowledge, retrieved messages,
history) in, the ``mnemo.rpc.context.assemble.v1`` reply out. No I/O, so every budget rule is unit-tested.

The contract, and where each rule is documented next to the code that implements it:

- Sections, in injection order, empty ones left out: ``system``, ``persona``, ``lore``,
  ``legacy_memories``, ``memories``, ``knowledge``, ``directive`` (the knowledge rule, on by default),
  ``retrieved``, ``history``. What each says:
  :mod:`mnemo.services.context_assembler.assemble.render`; what is kept of each: :class:`~.draft.Draft`.
- ``messages``, the same context for a chat-completions API: :mod:`mnemo.services.context_assembler.assemble.messages`.
- Budget: whole items fill ``max_tokens``, the reserved ones first (constant then keyword lore, the newest
  ``min_history`` messages, the ``directive``), then knowledge, memories, legacy memories and retrieved messages competing by
  value per token (``packing.py``), and the reply never exceeds it unless ``system`` and ``persona`` alone
  do: :func:`mnemo.services.context_assembler.assemble.budget.pack`.
- Tokens: every section's ``tokens`` is the ``counter``'s count of its rendered text (the configured LLM's
  tokenizer, or :func:`mnemo.shared.tokens.estimate_tokens`) and ``token_count`` their sum; the blank lines
  joining sections and the chat messages' framing are not counted.
- ``degraded``: the gathering's entries (unknown bot, index or embedder down, a read model unreachable),
  then a constant lore entry or a fact of the speaking bot related to the request the budget left out
  (:func:`~.budget.pack`).
- ``sources``: what each kept item came from: system, persona, lore (insertion order), legacy memories and
  memories, knowledge, retrieved, history; a memory written through the memory API (``exact_kind`` ``memory``,
  with its assets) right after the items of the section its type puts it in, under their v1 ``kind``.
"""

from __future__ import annotations

from mnemo.services.context_assembler.assemble.budget import pack, reachable_history
from mnemo.services.context_assembler.assemble.draft import AssemblyInput, Draft, in_order
from mnemo.services.context_assembler.assemble.messages import chat_messages
from mnemo.services.context_assembler.assemble.render import SECTION_ORDER
from mnemo_client.wire.contract import Asset, ContextAssembleReply, Section, Source, SourceKind

__all__ = ["AssemblyInput", "assemble", "reachable_history"]


def assemble(inp: AssemblyInput) -> ContextAssembleReply:
    """Sections, chat messages, sources and token count within ``inp.max_tokens`` (see the module docstring)."""
    draft, degraded = pack(inp)
    return _reply(draft, degraded)


#: v1's kind for a remembered memory: that of the items it sits among. v1's kinds are frozen (released clients
#: reject another), so its own kind, ``memory``, goes in ``exact_kind``.
_V1_KIND_BY_SECTION: dict[str, SourceKind] = {"lore": "lore", "memories": "summary", "knowledge": "knowledge"}


def _remembered_sources(draft: Draft, section: str) -> list[Source]:
    """A remembered memory's source: its id, score, why (type, namespace, who) and its assets."""
    kind = _V1_KIND_BY_SECTION[section]
    return [
        Source(
            kind=kind,
            exact_kind="memory",
            id=m.memory_id,
            score=m.score,
            detail=m.why,
            assets=[Asset.model_validate(a) for a in m.assets],
        )
        for m in draft.remembered_in_order(section)
    ]


def _reply(draft: Draft, degraded: list[str]) -> ContextAssembleReply:
    inp = draft.inp
    count = inp.counter.count
    texts = {name: draft.render(name) for name in SECTION_ORDER}
    sections = [Section(name=n, text=t, tokens=count(t)) for n, t in texts.items() if t or n == "system"]

    history = draft.history_oldest_first()
    sources: list[Source] = [Source(kind="system", id=inp.bot_id)]
    if inp.persona is not None:
        sources.append(Source(kind="persona", id=inp.persona.persona_id))
    sources += [
        Source(kind=i.source_kind, id=i.source_id or i.ident, detail=i.detail) for i in in_order(inp.lore, draft.lore)
    ]
    sources += _remembered_sources(draft, "lore")
    sources += [
        Source(kind=m.kind, id=m.summary_id, message_ids=list(m.message_ids), score=m.score)
        for m in [*draft.legacy_in_order(), *draft.memories_in_order()]
    ]
    sources += _remembered_sources(draft, "memories")
    sources += [
        Source(kind="knowledge", id=f.fact_id, message_ids=list(f.message_ids))
        for f in in_order(inp.knowledge, draft.knowledge)
    ]
    sources += _remembered_sources(draft, "knowledge")
    sources += [
        Source(kind="message", id=r.message_id, message_ids=[r.message_id], score=r.score)
        for r in draft.retrieved_in_order()
    ]
    sources += [Source(kind="message", id=h.message_id, message_ids=[h.message_id]) for h in history]

    system = "\n\n".join(s.text for s in sections if s.name != "history")
    return ContextAssembleReply(
        context="\n\n".join(s.text for s in sections),
        sections=sections,
        sources=sources,
        token_count=sum(s.tokens for s in sections),
        degraded=degraded,
        messages=chat_messages(system, history, draft.kept_lore("history"), inp.bot_id),
    )
