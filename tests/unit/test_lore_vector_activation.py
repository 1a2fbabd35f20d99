"""Vector activation, pure parts: which lore points the embedding service writes and deletes, the chunking of
long entries, and how the context-assembler turns search hits into forced activations with their similarity."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from mnemo.services.context_assembler.items import ChatLine
from mnemo.services.context_assembler.lore.activate import activate_lore_state
from mnemo.services.context_assembler.lore.engine.compiled import ActiveBook, compile_lore
from mnemo.services.context_assembler.lore.loader import LoreLoader
from mnemo.services.context_assembler.lore.vectors import best_entries, vector_query
from mnemo.services.embedding.chunking import LORE_MAX_TOKENS
from mnemo.services.embedding.lore_entries import lore_chunks, plan_lore
from mnemo.services.embedding.plan import Plan
from mnemo.shared.aggregates.lorebook import BookState
from mnemo.shared.events.recorded import lorebook_stream
from mnemo.shared.lore.model import Lorebook, LoreEntry, WorldInfoSettings
from mnemo.shared.tokens import estimate_tokens
from mnemo.shared.vectors.points import LORE_ENTRY
from mnemo.shared.vectors.port import Match, ScoredPoint, VectorFilter, VectorIndexUnavailable, VectorQuery
from mnemo_client.wire.contract import ContextAssembleRequest
from tests.envelopes import recorded
from tests.fakes.embedders import ConstantEmbedder

T0 = datetime(2026, 5, 1, tzinfo=UTC)
TENANT, BOOK = "t1", "book-1"


def state(*entries: dict[str, Any], deleted: bool = False) -> BookState:
    book = Lorebook(entries=[LoreEntry.model_validate(e) for e in entries])
    return BookState(TENANT, BOOK, owner_user_id="u", book=book, deleted=deleted, version=len(entries) + 1)


def event(type_: str, version: int = 5, **payload: Any) -> Any:
    return recorded(
        TENANT, lorebook_stream(TENANT, BOOK), version, type_, {"lorebook_id": BOOK, "at": T0, **payload}, T0
    )


ENTRIES = (
    {"uid": 0, "content": "Keys only.", "key": ["a"]},
    {"uid": 1, "content": "The reef glows at night.", "activationMode": "vector"},
    {"uid": 2, "content": "Storms come from the east.", "activationMode": "hybrid", "key": ["storm"]},
    {"uid": 3, "content": "Disabled.", "activationMode": "vector", "disable": True},
    {"uid": 4, "content": "   ", "activationMode": "vector"},
)


def test_an_entry_change_deletes_that_entrys_points_and_indexes_its_current_content() -> None:
    plan = Plan()
    updated = event("lorebook.entry_updated", uid=1, entry={"uid": 1, "content": "stale text from the event"})
    plan_lore([updated], plan, model="m", books={(TENANT, BOOK): state(*ENTRIES)})
    [deletion] = plan.deletions
    assert Match("uid", (1,)) in deletion.must
    assert Match("lorebook_id", (BOOK,)) in deletion.must
    assert Match("tenant_id", (TENANT,)) in deletion.must
    assert [p.text for p in plan.points] == ["The reef glows at night."], "from the book's current state"
    [point] = plan.points
    assert point.payload == {
        "tenant_id": TENANT,
        "kind": LORE_ENTRY,
        "lorebook_id": BOOK,
        "uid": 1,
        "source_id": f"{BOOK}:1",
        "model": "m",
        "chunk": 0,
    }, "ids and filter fields only, never text"


def test_an_import_reindexes_every_vector_and_hybrid_entry_that_is_enabled_and_not_empty() -> None:
    plan = Plan()
    plan_lore([event("lorebook.imported", version=1)], plan, model="m", books={(TENANT, BOOK): state(*ENTRIES)})
    [deletion] = plan.deletions
    assert not any(c.key == "uid" for c in deletion.must), "the whole book's points go first"
    assert sorted({p.payload["uid"] for p in plan.points}) == [1, 2]  # type: ignore[type-var]


def test_a_keyword_entry_or_a_deleted_entry_or_book_leaves_only_deletions() -> None:
    for events, books in (
        ([event("lorebook.entry_updated", uid=0, entry={})], {(TENANT, BOOK): state(*ENTRIES)}),
        ([event("lorebook.entry_deleted", uid=1)], {(TENANT, BOOK): state(ENTRIES[0])}),
        ([event("lorebook.deleted")], {(TENANT, BOOK): state(deleted=True)}),
        ([event("lorebook.entry_created", uid=1, entry={})], {}),  # the read model no longer has the book
    ):
        plan = Plan()
        plan_lore(events, plan, model="m", books=books)
        assert len(plan.deletions) == 1
        assert plan.points == []


def test_point_ids_are_deterministic_so_a_redelivery_overwrites_the_same_points() -> None:
    ids = []
    for _ in range(2):
        plan = Plan()
        plan_lore([event("lorebook.imported", version=1)], plan, model="m", books={(TENANT, BOOK): state(*ENTRIES)})
        ids.append([p.id for p in plan.points])
    assert ids[0] == ids[1]
    assert len(set(ids[0])) == len(ids[0])


def test_long_entries_are_cut_at_paragraphs_then_sentences_then_words_within_the_lore_window() -> None:
    paragraph = " ".join(f"Sentence {i} about the northern reef and its tides." for i in range(40))
    text = "\n\n".join([paragraph, paragraph.replace("northern", "southern")])
    chunks = lore_chunks(text)
    assert len(chunks) >= 2
    assert all(estimate_tokens(c) <= LORE_MAX_TOKENS for c in chunks)
    assert chunks[0].rstrip().endswith(".")
    assert chunks[0] == paragraph or chunks[0].rstrip().endswith("tides."), "cut at a paragraph or a sentence"
    no_breaks = "word " * 2000
    assert all(estimate_tokens(c) <= LORE_MAX_TOKENS for c in lore_chunks(no_breaks))
    assert lore_chunks("A short entry.") == ["A short entry."]


def hit(book: str, uid: int, score: float) -> ScoredPoint:
    return ScoredPoint(id=f"{book}-{uid}-{score}", score=score, payload={"lorebook_id": book, "uid": uid})


def test_best_entries_keeps_the_best_chunk_of_each_entry_above_the_threshold_up_to_the_limit() -> None:
    points = [hit("b", 1, 0.5), hit("b", 1, 0.7), hit("b", 2, 0.6), hit("b", 3, 0.2), hit("x", 9, 0.9)]
    assert best_entries(points, {"b": "b@3"}, limit=5, threshold=0.3) == {"b@3.1": 0.7, "b@3.2": 0.6}
    assert best_entries(points, {"b": "b@3"}, limit=1, threshold=0.3) == {"b@3.1": 0.7}


def test_the_vector_query_is_the_user_message_then_the_recent_messages_newest_first() -> None:
    history = [ChatLine(f"m{i}", i, "user", "A", f"line {i}") for i in range(4)]
    assert vector_query(history, "now", 2) == "now\nline 3\nline 2"
    assert vector_query(history, " ", 0) == ""


def lore_of(*entries: dict[str, Any]) -> Any:
    book = Lorebook(entries=[LoreEntry.model_validate({"position": 2, **e}) for e in entries])
    return compile_lore([ActiveBook("b@4", book)], WorldInfoSettings())


def test_similar_entries_are_activated_with_their_similarity_and_keywords_still_work() -> None:
    lore = lore_of(
        {"uid": 1, "content": "The reef glows.", "activationMode": "vector", "key": ["dragon"]},
        {"uid": 2, "content": "Storms.", "activationMode": "hybrid", "key": ["storm"]},
        {"uid": 3, "content": "Dragons.", "key": ["dragon"]},
    )
    history = [ChatLine("m0", 0, "user", "Mira", "A dragon and a storm!")]
    keyword_only = activate_lore_state(lore, history, "", max_tokens=8000, seed="s").items
    assert {i.uid: i.detail for i in keyword_only} == {2: "key: storm", 3: "key: dragon"}, (
        "a vector-mode entry never fires on its keys; a hybrid one does"
    )
    similar = activate_lore_state(lore, history, "", max_tokens=8000, seed="s", similar={"b@4.1": 0.712}).items
    assert {i.uid: i.detail for i in similar} == {1: "similarity: 0.71", 2: "key: storm", 3: "key: dragon"}


def test_vector_hits_go_through_the_same_budget_and_rules_as_keyword_hits() -> None:
    lore = lore_of(
        {"uid": 1, "content": "word " * 400, "activationMode": "vector", "order": 10},
        {"uid": 2, "content": "Short.", "activationMode": "vector", "order": 20},
        {"uid": 3, "content": "Off.", "activationMode": "vector", "disable": True},
    )
    forced = {"b@4.1": 0.9, "b@4.2": 0.5, "b@4.3": 0.99}
    items = activate_lore_state(lore, [], "hello", max_tokens=400, seed="s", similar=forced).items
    assert [i.uid for i in items] == [2], "the budget (25% of 400) cuts the long entry; disabled never fires"


class RecordingIndex:
    """Answers ``search`` with fixed points and records the filter it was given (or fails)."""

    def __init__(self, points: list[ScoredPoint], fail: bool = False) -> None:
        self.points, self.fail = points, fail
        self.filters: list[VectorFilter] = []

    async def search(self, query: VectorQuery) -> list[ScoredPoint]:
        if self.fail:
            raise VectorIndexUnavailable("down")
        self.filters.append(query.flt)
        return [p for p in self.points if query.score_threshold is None or p.score >= query.score_threshold]


class NoReads:
    async def attached(self, *args: Any) -> list[Any]:
        return []

    async def books_by_ids(self, *args: Any) -> dict[str, Any]:
        return {}


REQ = ContextAssembleRequest(tenant_id="t1", user_id="u", conversation_id="c", bot_id="b", user_message="hi")
VECTOR_BOOK = Lorebook(entries=[LoreEntry(uid=1, content="The reef glows.", activation_mode="vector")])
KEYWORD_BOOK = Lorebook(entries=[LoreEntry(uid=1, content="Keys.", key=["k"])])


async def test_the_search_filters_on_the_tenant_and_the_attached_books_inside_the_query() -> None:
    index = RecordingIndex([hit("b1", 1, 0.8), hit("b1", 2, 0.2)])
    loader = LoreLoader(NoReads(), index=cast(Any, index), embedder=ConstantEmbedder())
    books = [ActiveBook("b1@3", VECTOR_BOOK), ActiveBook("b2@1", VECTOR_BOOK), ActiveBook("b3@1", KEYWORD_BOOK)]
    degraded: list[str] = []
    found = await loader.similar(REQ, books, [], degraded)
    assert found == {"b1@3.1": 0.8}
    [flt] = index.filters
    assert Match("tenant_id", ("t1",)) in flt.must
    assert Match("kind", ("lore_entry",)) in flt.must
    assert Match("lorebook_id", ("b1", "b2")) in flt.must, "only the attached books with vector entries"
    assert degraded == []


async def test_no_vector_entries_means_no_search_and_a_failed_search_degrades_to_keywords() -> None:
    index = RecordingIndex([], fail=True)
    loader = LoreLoader(NoReads(), index=cast(Any, index), embedder=ConstantEmbedder())
    degraded: list[str] = []
    assert await loader.similar(REQ, [ActiveBook("b3@1", KEYWORD_BOOK)], [], degraded) == {}
    assert degraded == [], "keyword-only books never reach the index"
    assert await loader.similar(REQ, [ActiveBook("b1@1", VECTOR_BOOK)], [], degraded) == {}
    assert degraded == ["lore_vectors"]
