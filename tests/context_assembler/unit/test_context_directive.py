"""The individual-knowledge directive (issue 28): a section stating the speaking bot's rule, after its facts."""

from __future__ import annotations

from mnemo.services.context_assembler.assemble.assembly import AssemblyInput, assemble
from mnemo.services.context_assembler.items import BotProfile, KnowledgeItem

ODO = BotProfile("odo", "Odo", "A constable.")


def test_the_directive_names_the_speaking_bot_and_follows_its_facts() -> None:
    reply = assemble(AssemblyInput("odo", ODO, None, knowledge=[KnowledgeItem("f1", "The vault is empty.")],
                                   directive=True))  # fmt: skip
    names = [s.name for s in reply.sections]
    assert names == ["system", "knowledge", "directive"]
    rule = reply.sections[2].text
    assert "Odo's response MUST be consistent with what Odo knows" in rule
    assert "ignorance, curiosity or confusion" in rule
    assert rule in reply.messages[0].content
    assert reply.token_count == sum(s.tokens for s in reply.sections)


def test_off_it_is_absent_and_a_budget_too_small_for_it_leaves_it_out() -> None:
    assert "directive" not in [s.name for s in assemble(AssemblyInput("odo", ODO, None)).sections]
    wordy = BotProfile("odo", "Odo", "A constable of the station who keeps order. " * 4)
    assert "directive" in [s.name for s in assemble(AssemblyInput("odo", wordy, None, directive=True)).sections]
    tiny = assemble(AssemblyInput("odo", wordy, None, max_tokens=64, directive=True))
    assert tiny.token_count <= 64
    assert "directive" not in [s.name for s in tiny.sections]
