"""Public wire contract v1 of the lore activation test: which entries a chat text fires, and why, without
assembling a context or keeping anything (request-reply, answered by the context-assembler, which runs the
activation engine).

The scan is the one a context runs (SillyTavern's World Info rules over the same books, keys, secondary keys
and logic, vector similarity, constant entries, the budget), on a fresh chat: no timed state (sticky, cooldown,
delay) is read or written, and probabilities are rolled with a fixed seed, so the same request always fires
the same entries. Books are the tenant's only: an id of another tenant's book is ``not_found``.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from mnemo_client.wire.contract import Id, _Tenanted, _Wire

MAX_TEST_TEXT = 100_000
MAX_TEST_HISTORY = 50
MAX_TEST_BOOKS = 50


class LoreTestActivationRequest(_Tenanted):
    """`mnemo.rpc.lore.test_activation.v1` request: a chat text and the books to try it on."""

    text: str = Field(
        ..., min_length=1, max_length=MAX_TEST_TEXT, description="the newest message of the chat, as a user wrote it"
    )
    history: list[str] = Field(
        default_factory=list,
        max_length=MAX_TEST_HISTORY,
        description="earlier messages, oldest first (SillyTavern scans the newest two by default)",
    )
    lorebook_ids: list[Id] = Field(
        default_factory=list,
        max_length=MAX_TEST_BOOKS,
        description="try these books; none: the books attached to `bot_id` (and to the conversation, if named)",
    )
    bot_id: Id | None = Field(None, description="the character about to speak (`{{char}}`; its attached books)")
    user_id: Id | None = Field(None, description="with `conversation_id`: that conversation's books too")
    conversation_id: Id | None = None
    max_tokens: int = Field(8000, ge=64, le=1_000_000, description="the context size the lore budget is a share of")

    @model_validator(mode="after")
    def _books_named(self) -> LoreTestActivationRequest:
        if not self.lorebook_ids and self.bot_id is None:
            raise ValueError("name the books to try: `lorebook_ids`, or a `bot_id` whose attached books to use")
        if (self.user_id is None) != (self.conversation_id is None):
            raise ValueError("a conversation is named by both `user_id` and `conversation_id`")
        if sum(len(m) for m in self.history) > MAX_TEST_TEXT:
            raise ValueError(f"the history is longer than {MAX_TEST_TEXT} characters")
        return self


class ActivatedLoreEntry(_Wire):
    """An entry the text fired, with why and whether it fit the budget."""

    lorebook_id: str
    uid: int
    comment: str = Field("", description="the entry's title (SillyTavern's comment)")
    content: str = Field(..., description="its text as it would be placed, macros replaced")
    why: str = Field(..., description="`key: compass` (and `secondary: ...`), `similarity: 0.71`, `constant`, ...")
    key: str | None = Field(None, description="the key that matched, for a key activation")
    secondary: list[str] = Field(default_factory=list, description="the secondary keys that matched")
    position: int = Field(..., description="where it goes (SillyTavern's World Info position, 0-7)")
    order: float
    tokens: int = Field(..., ge=0)
    placed: bool = Field(
        ...,
        description="false: it fired but its position places it nowhere (as imported: not 0-7, or a nameless outlet)",
    )


class LoreTestActivationReply(_Wire):
    """`mnemo.rpc.lore.test_activation.v1` reply: the fired entries in the order they would be inserted."""

    entries: list[ActivatedLoreEntry]
    lorebook_ids: list[str] = Field(..., description="the books that were scanned")
    scanned_entries: int = Field(..., ge=0, description="the enabled entries of those books")
    budget: int = Field(..., ge=0, description="the lore budget in tokens for `max_tokens`")
    tokens_used: int = Field(..., ge=0)
    overflowed: bool = Field(..., description="the budget cut some entries that matched: they are not listed")
    degraded: list[str] = Field(
        default_factory=list, description="what could not be used: `lore_vectors` (keys only), `lore_scan_budget`"
    )
