"""Pure context assembly: what each section says (bot profile, persona instructions, persona labels and the
switch note, lore by position) and the chat-completions form of the reply."""

from __future__ import annotations

from mnemo.services.context_assembler.assemble.assembly import AssemblyInput, assemble
from mnemo.services.context_assembler.items import BotProfile, ChatLine, KnowledgeItem, PersonaProfile, SummaryItem
from tests.context_assembler.unit.scene import bot_line, lore_entry, user_line

BOT = BotProfile("bot-1", "Mirelle", "Speak tersely.", gender="female", age="52", knowledge_sharing="guarded")
TOBIN = PersonaProfile("p-tobin", "Tobin", "A stowaway.", ("curious",), instructions="Call me Captain Tobin.")


def user(i: int, text: str, persona: str | None = "p-tobin", name: str = "Tobin") -> ChatLine:
    return user_line(f"m{i}", i, text, persona, name)


def bot(i: int, text: str, author: str = "bot-1", name: str = "Mirelle") -> ChatLine:
    return bot_line(f"m{i}", i, text, author, name)


def section(reply, name: str) -> str:
    return next(s.text for s in reply.sections if s.name == name)


def test_system_has_name_profile_instructions_and_sharing_and_persona_has_its_instructions():
    reply = assemble(AssemblyInput(bot_id="bot-1", bot=BOT, persona=TOBIN))
    assert section(reply, "system") == (
        "You are Mirelle.\nGender: female. Age: 52.\nSpeak tersely.\n"
        "Mirelle shares what they know only with those they trust, and only when it serves them."
    )
    assert section(reply, "persona") == (
        "The user plays as Tobin.\nA stowaway.\nTraits: curious.\n"
        "The user's instructions while playing Tobin:\nCall me Captain Tobin."
    )


def test_profile_fields_left_out_when_not_given_and_unknown_sharing_ignored():
    plain = BotProfile("bot-1", "Mirelle", "Speak tersely.", knowledge_sharing="telepathic")
    reply = assemble(AssemblyInput(bot_id="bot-1", bot=plain, persona=PersonaProfile("p", "Tobin")))
    assert section(reply, "system") == "You are Mirelle.\nSpeak tersely."
    assert section(reply, "persona") == "The user plays as Tobin."
    for sharing, words in (("open", "freely"), ("secretive", "unless pressed")):
        shared = assemble(
            AssemblyInput(bot_id="b", bot=BotProfile("b", "M", "", knowledge_sharing=sharing), persona=None)
        )
        assert words in section(shared, "system")


def test_a_persona_switch_labels_each_line_and_notes_it_in_the_system_section():
    hist = [
        user(0, "I am Aria, a bard.", "p-aria", "Aria"),
        bot(1, "Welcome, Aria."),
        user(2, "Now I am Tobin.", "p-tobin", "Tobin"),
        bot(3, "Hello, Tobin."),
    ]
    reply = assemble(AssemblyInput(bot_id="bot-1", bot=BOT, persona=TOBIN, history=hist))
    text = section(reply, "history")
    assert "Aria (user persona): I am Aria, a bard." in text
    assert "Tobin (user persona): Now I am Tobin." in text
    assert "Mirelle (assistant): Welcome, Aria." in text
    system = section(reply, "system")
    assert "more than one persona in this conversation (Aria, Tobin)" in system
    assert system.endswith("The user now plays as Tobin.")
    assert section(reply, "persona").startswith("The user plays as Tobin.")


def test_one_persona_gets_labels_but_no_note():
    hist = [user(0, "Hello."), bot(1, "Hi.")]
    reply = assemble(AssemblyInput(bot_id="bot-1", bot=BOT, persona=TOBIN, history=hist))
    assert "Tobin (user persona): Hello." in section(reply, "history")
    assert "more than one persona" not in reply.context


def test_the_note_goes_when_the_lines_of_the_other_persona_are_cut():
    hist = [user(0, "I am Aria. " * 40, "p-aria", "Aria"), bot(1, "Hm."), user(2, "Tobin here."), bot(3, "Yes.")]
    full = assemble(AssemblyInput(bot_id="bot-1", bot=BOT, persona=TOBIN, history=hist, max_tokens=100_000))
    assert "more than one persona" in section(full, "system")
    tight = assemble(
        AssemblyInput(bot_id="bot-1", bot=BOT, persona=TOBIN, history=hist, max_tokens=full.token_count - 50)
    )
    assert [s.id for s in tight.sources if s.kind == "message"] == ["m1", "m2", "m3"]
    assert "more than one persona" not in tight.context


def test_messages_one_system_message_then_the_history_as_chat_turns():
    hist = [
        user(0, "Where to?", "p-aria", "Aria"),
        bot(1, "North."),
        bot(2, "I disagree.", author="bot-oren", name="Oren"),
        ChatLine("m3", 3, "narrator", "Narrator", "Thunder rolls."),
        user(4, "Let's go."),
    ]
    inp = AssemblyInput(
        bot_id="bot-1",
        bot=BOT,
        persona=TOBIN,
        history=hist,
        memories=[SummaryItem("s1", "They met at the dock.", 0.5)],
        knowledge=[KnowledgeItem("f1", "Tobin owes a debt.")],
    )
    reply = assemble(inp)
    first, *chat = reply.messages
    assert first.role == "system"
    assert first.content == "\n\n".join(s.text for s in reply.sections if s.name != "history")
    assert [(m.role, m.content) for m in chat] == [
        ("user", "Aria: Where to?"),
        ("assistant", "North."),
        ("assistant", "Oren: I disagree."),
        ("system", "Narrator (narrator): Thunder rolls."),
        ("user", "Tobin: Let's go."),
    ]


def test_lore_goes_where_its_position_says():
    hist = [user(i, f"line {i}") if i % 2 == 0 else bot(i, f"line {i}") for i in range(4)]
    entries = [
        lore_entry(1, "BEFORE the character.", position=0),
        lore_entry(2, "AFTER the character.", position=1),
        lore_entry(3, "AN BOTTOM note.", position=3),
        lore_entry(4, "AN TOP note.", position=2),
        lore_entry(5, "EM TOP example.", position=5),
        lore_entry(6, "DEPTH two as user.", position=4, depth=2, role=1),
        lore_entry(7, "DEPTH zero as system.", position=4, depth=0, role=0),
        lore_entry(8, "DEPTH deeper than history as assistant.", position=4, depth=40, role=2),
    ]
    reply = assemble(AssemblyInput(bot_id="bot-1", bot=BOT, persona=None, history=hist, lore=entries))
    system = section(reply, "system").split("\n")
    assert system[:5] == ["You are Mirelle.", "BEFORE the character.", "Gender: female. Age: 52.", "Speak tersely.",
                          "AFTER the character."]  # fmt: skip
    assert section(reply, "lore").split("\n") == [
        "World and character lore:",
        "AN TOP note.",
        "EM TOP example.",
        "AN BOTTOM note.",
    ]
    assert section(reply, "history").split("\n") == [
        "Recent conversation:",
        "[assistant] DEPTH deeper than history as assistant.",
        "Tobin (user persona): line 0",
        "Mirelle (assistant): line 1",
        "[user] DEPTH two as user.",
        "Tobin (user persona): line 2",
        "Mirelle (assistant): line 3",
        "[system] DEPTH zero as system.",
    ]
    chat = [(m.role, m.content) for m in reply.messages[1:]]
    assert chat == [
        ("assistant", "DEPTH deeper than history as assistant."),
        ("user", "Tobin: line 0"),
        ("assistant", "line 1"),
        ("user", "DEPTH two as user."),
        ("user", "Tobin: line 2"),
        ("assistant", "line 3"),
        ("system", "DEPTH zero as system."),
    ]
    assert "DEPTH" not in reply.messages[0].content, "at-depth lore is in the history, not the system message"
    assert sorted(s.id for s in reply.sources if s.kind == "lore") == [f"book.{i}" for i in range(1, 9)]


def test_a_message_shown_as_history_is_not_also_retrieved():
    hist = [user(0, "the silver key"), bot(1, "keep it")]
    retrieved = [ChatLine("m0", 0, "user", "Tobin", "the silver key", 0.9, persona_id="p-tobin")]
    reply = assemble(AssemblyInput(bot_id="bot-1", bot=BOT, persona=TOBIN, history=hist, retrieved=retrieved))
    assert [s.name for s in reply.sections] == ["system", "persona", "history"]
    assert [s.id for s in reply.sources if s.kind == "message"] == ["m0", "m1"]
