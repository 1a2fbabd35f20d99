"""Lore in the context: the pure budget rules of the lore section, activation over the chat, and the loader's
per-version cache (with an in-process fake of the lorebooks read model)."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.services.context_assembler.assemble.assembly import AssemblyInput, assemble, reachable_history
from mnemo.services.context_assembler.items import BotProfile, ChatLine, LoreItem, PersonaProfile, SummaryItem
from mnemo.services.context_assembler.lore.activate import activate_lore_state
from mnemo.services.context_assembler.lore.engine.compiled import ActiveBook
from mnemo.services.context_assembler.lore.loader import LoreLoader
from mnemo.shared.lore.model import Lorebook, LoreEntry
from mnemo.shared.readmodels.lore import LorebookRef, LorebookView
from mnemo_client.wire.contract import ContextAssembleRequest

BOT = BotProfile("bot-1", "Ada", "You guide visitors around the station.")
PERSONA = PersonaProfile("p-1", "Mira", "A visiting geologist.")


def lore(uid: int, words: int, *, constant: bool = False, order: float = 100) -> LoreItem:
    return LoreItem("book", uid, " ".join(f"lore{uid}" for _ in range(words)), f"key: k{uid}", order, constant)


def hist(n: int) -> list[ChatLine]:
    return [ChatLine(f"m{i}", i, "user", "Mira", f"message {i} about the long voyage north") for i in range(n)]


def test_lore_section_sits_after_persona_and_before_memories_with_sources():
    inp = AssemblyInput(
        bot_id="bot-1",
        bot=BOT,
        persona=PERSONA,
        memories=[SummaryItem("s1", "They met at the dock.", 0.8)],
        history=hist(3),
        lore=[lore(4, 5), lore(1, 5, constant=True)],
    )
    reply = assemble(inp)
    assert [s.name for s in reply.sections] == ["system", "persona", "lore", "memories", "history"]
    assert reply.sections[2].text.index("lore4") < reply.sections[2].text.index("lore1"), "insertion order kept"
    lore_sources = [s for s in reply.sources if s.kind == "lore"]
    assert [(s.id, s.detail) for s in lore_sources] == [("book.4", "key: k4"), ("book.1", "key: k1")]
    assert reply.degraded == []


def test_lore_is_shrunk_last_after_history_memories_and_retrieved():
    inp = AssemblyInput(
        bot_id="bot-1",
        bot=BOT,
        persona=None,
        memories=[SummaryItem("s1", "A long memory " * 10, 0.9)],
        retrieved=[ChatLine("r1", 0, "user", "Mira", "an old line " * 10, 0.9)],
        history=hist(20),
        lore=[lore(1, 30), lore(2, 30)],
        max_tokens=130,
        min_history=4,
    )
    reply = assemble(inp)
    names = [s.name for s in reply.sections]
    assert "lore" in names
    assert "memories" not in names
    assert "retrieved" not in names
    assert {s.id for s in reply.sources if s.kind == "lore"} == {"book.1", "book.2"}
    assert reply.token_count <= 130


def test_constants_first_then_higher_order_and_a_constant_that_cannot_fit_is_degraded():
    fixed = assemble(AssemblyInput(bot_id="bot-1", bot=BOT, persona=None)).token_count
    items = [lore(1, 20, order=1), lore(2, 20, order=50), lore(3, 20, constant=True), lore(9, 400, constant=True)]
    two = assemble(AssemblyInput(bot_id="bot-1", bot=BOT, persona=None, lore=items[1:3])).token_count
    reply = assemble(AssemblyInput(bot_id="bot-1", bot=BOT, persona=None, lore=items, max_tokens=two + 5))
    kept = [s.id for s in reply.sources if s.kind == "lore"]
    assert kept == ["book.2", "book.3"], "the constant, then the higher order; the low order one is cut"
    assert reply.degraded == ["lore:9"]
    assert fixed < reply.token_count <= two + 5


def test_reachable_history_leaves_room_for_the_lore():
    without = reachable_history("bot-1", BOT, PERSONA, hist(40), 400)
    with_lore = reachable_history("bot-1", BOT, PERSONA, hist(40), 400, [lore(1, 60)])
    assert 0 < len(with_lore) < len(without)


_text = st.text(alphabet="abc xyz.", min_size=1, max_size=200)


@settings(max_examples=150, deadline=None)
@given(
    lore_texts=st.lists(st.tuples(_text, st.booleans(), st.integers(0, 200)), max_size=6),
    n=st.integers(0, 30),
    max_tokens=st.integers(64, 1500),
)
def test_budget_holds_and_history_stays_within_the_reachable_window(lore_texts, n, max_tokens):
    items = [LoreItem("b", i, t, "key: x", o, c) for i, (t, c, o) in enumerate(lore_texts)]
    inp = AssemblyInput(bot_id="bot-1", bot=BOT, persona=PERSONA, history=hist(n), lore=items, max_tokens=max_tokens)
    reply = assemble(inp)
    fixed = sum(s.tokens for s in reply.sections if s.name in ("system", "persona"))
    if fixed <= max_tokens:
        assert reply.token_count <= max_tokens
    reachable = {h.message_id for h in reachable_history("bot-1", BOT, PERSONA, hist(n), max_tokens, items)}
    assert {s.id for s in reply.sources if s.kind == "message"} <= reachable
    missing = {f"lore:{i.uid}" for i in items if i.constant} - {
        f"lore:{s.id.split('.')[1]}" for s in reply.sources if s.kind == "lore"
    }
    assert set(reply.degraded) == missing, "exactly the constant entries left out are degraded"


BOOK = Lorebook(
    name="Station",
    entries=[
        LoreEntry(uid=1, key=["Research Labs"], keysecondary=["Marine Lab"], content="Labs: {{char}} knows them."),
        LoreEntry(uid=2, key=["Reactor"], content="The reactor is geothermal."),
        LoreEntry(uid=3, constant=True, content="The station orbits nothing; it sits on Lythora."),
        LoreEntry(uid=4, key=["Hangar"], content="Hangar text.", position=10),
    ],
)


async def test_activation_scans_history_and_user_message_and_says_why():
    loader = LoreLoader(FakeLoreReads({}))
    compiled = await loader.compiled("t1", [ActiveBook("bk@1", BOOK, "character")], {"char": "Ada"})
    history = [ChatLine("m0", 0, "user", "Mira", "Where are the Research Labs and the Marine Lab?")]
    items = activate_lore_state(compiled, history, "And the Hangar?", max_tokens=4000, seed="c1:1").items
    by_uid = {i.uid: i for i in items}
    assert set(by_uid) == {1, 3}, "uid 2 not mentioned; uid 4 (position 10) is activated but placed nowhere"
    assert by_uid[1].book_id == "bk"
    assert by_uid[1].detail == "key: Research Labs (secondary: Marine Lab)"
    assert by_uid[1].content == "Labs: Ada knows them."
    assert by_uid[3].detail == "constant"
    assert by_uid[3].constant
    newest_only = activate_lore_state(compiled, [], "Tell me about the Reactor", max_tokens=4000, seed="c1:0").items
    assert {i.uid for i in newest_only} == {2, 3}, "the user message is scanned as the newest message"


class FakeLoreReads:
    """The lorebooks read model in memory, keyed by tenant: what the loader may see, and how often it reads."""

    def __init__(self, books: dict[tuple[str, str], LorebookView]) -> None:
        self.books = books
        self.attachments: dict[tuple[str, str], list[str]] = {}  # (tenant, bot) -> book ids
        self.fetches: list[list[str]] = []

    async def attached(
        self, tenant_id: str, bot_id: str, user_id: str | None = None, conversation_id: str | None = None
    ) -> list[LorebookRef]:
        ids = self.attachments.get((tenant_id, bot_id), [])
        return [LorebookRef(b, self.books[(tenant_id, b)].version, "character") for b in ids]

    async def books_by_ids(self, tenant_id: str, lorebook_ids: Sequence[str]) -> dict[str, LorebookView]:
        self.fetches.append(list(lorebook_ids))
        return {b: self.books[(tenant_id, b)] for b in lorebook_ids if (tenant_id, b) in self.books}


def view(tenant: str, version: int, book: Lorebook) -> LorebookView:
    return LorebookView(tenant, "bk", "owner", "Station", "sillytavern", version, book, {})


def request(tenant: str, bot: str = "bot-1") -> ContextAssembleRequest:
    return ContextAssembleRequest(tenant_id=tenant, user_id="u", conversation_id="c", bot_id=bot)


async def test_loader_caches_per_book_version_and_never_crosses_tenants_or_bots():
    reads = FakeLoreReads({("t1", "bk"): view("t1", 1, BOOK)})
    reads.attachments[("t1", "bot-1")] = ["bk"]
    loader = LoreLoader(reads)
    first = await loader.books(request("t1"))
    again = await loader.books(request("t1"))
    assert [b.book for b in first] == [BOOK]
    assert again == first
    assert reads.fetches == [["bk"]], "the second request is served from the cache"
    assert await loader.compiled("t1", first, {}) is await loader.compiled("t1", again, {})

    edited = BOOK.model_copy(update={"entries": BOOK.entries[:1]})
    reads.books[("t1", "bk")] = view("t1", 2, edited)
    after_edit = await loader.books(request("t1"))
    assert [b.book for b in after_edit] == [edited]
    assert reads.fetches[-1] == ["bk"]
    assert await loader.compiled("t1", after_edit, {}) is not await loader.compiled("t1", first, {})

    assert await loader.books(request("t1", bot="bot-2")) == []
    assert await loader.books(request("t2")) == []
