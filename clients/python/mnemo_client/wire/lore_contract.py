"""Public wire contract v1 of lorebooks: import, export, attach/detach, and management of books and entries
(request-reply).

Every request is answered with its reply model or with ``ErrorReply`` (codes: ``bad_request`` for an invalid
request or a file that is not a readable lorebook, with the reason; ``not_found`` for an unknown book in the
tenant, or one the acting user does not own; ``internal``). Never change a published field's meaning; add a
new version of the subject instead.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from mnemo_client.wire.contract import Id, _Tenanted, _Wire

#: The largest entry uid, JavaScript's largest safe integer; also the bound of every number field of an entry
#: (``mnemo.shared.lore.model.MAX_NUMBER``).
MAX_UID = 2**53 - 1

LoreFormat = Literal["auto", "sillytavern", "chub", "card", "character_book", "lorebook_v3", "novelai", "agnai", "risu"]


class LoreImportRequest(_Tenanted):
    """`mnemo.rpc.lore.import.v1` request: a lorebook or character card file, as JSON or base64 bytes."""

    owner_user_id: Id = Field(..., description="the user importing the book (its owner)")
    name: str = Field(..., min_length=1, max_length=512, description="the book's display name")
    format: LoreFormat = Field(
        "auto", description="`auto` detects SillyTavern/Chub World Info, cards V2/V3, NovelAI, Agnai and Risu"
    )
    data: dict[str, Any] | None = Field(None, description="the file as a JSON object (World Info, card JSON, ...)")
    data_base64: str | None = Field(
        None, max_length=40_000_000, description="the file's bytes in base64 (PNG cards, or any file)"
    )
    attach_to_bots: list[Id] = Field(
        default_factory=list, max_length=1000, description="bots whose every conversation gets this book"
    )

    @model_validator(mode="after")
    def _one_file(self) -> LoreImportRequest:
        if (self.data is None) == (self.data_base64 is None):
            raise ValueError("give the file as exactly one of `data` (JSON object) or `data_base64`")
        return self


class LoreImportWarning(_Wire):
    uid: int | None = Field(..., description="the entry's uid, or null for the book as a whole")
    field: str = Field("", description="the field that was normalised")
    message: str = Field(
        ..., description="the field and what was done, e.g. `position: 10 is not a valid position; kept: ...`"
    )


class LoreImportReply(_Wire):
    """`mnemo.rpc.lore.import.v1` reply. Importing the same file again (same owner and name) is idempotent."""

    lorebook_id: str = Field(..., description="the book's id (derived from owner, name and file content)")
    entries: int = Field(..., ge=0, description="number of entries imported")
    format: str = Field("", description="the detected format")
    warnings: list[LoreImportWarning] = Field(default_factory=list, description="one per normalisation")


class LoreExportRequest(_Tenanted):
    """`mnemo.rpc.lore.export.v1` request."""

    lorebook_id: Id = Field(...)


class LoreExportReply(_Wire):
    """`mnemo.rpc.lore.export.v1` reply: a SillyTavern World Info file that imports back to the same entries."""

    lorebook_id: str
    name: str
    data: dict[str, Any] = Field(..., description='the World Info document (`{"entries": {uid: entry}}`)')


class ConversationRef(_Wire):
    user_id: Id = Field(..., description="the user owning the conversation")
    conversation_id: Id = Field(...)


class LoreAttachRequest(_Tenanted):
    """`mnemo.rpc.lore.attach.v1` request: attach a book to bots, and/or to one conversation."""

    lorebook_id: Id = Field(...)
    user_id: Id | None = Field(
        None, description="the acting user; when given, it must be the book's owner (else `not_found`)"
    )
    bot_ids: list[Id] = Field(default_factory=list, max_length=1000, description="every chat with these bots")
    conversation: ConversationRef | None = Field(None, description="one conversation (a user's own book)")

    @model_validator(mode="after")
    def _some_target(self) -> LoreAttachRequest:
        if not self.bot_ids and self.conversation is None:
            raise ValueError("give `bot_ids` or `conversation` (or both)")
        return self


class LoreAttachReply(_Wire):
    """`mnemo.rpc.lore.attach.v1` reply; attaching twice is harmless."""

    lorebook_id: str
    bot_ids: list[str]
    conversation: ConversationRef | None = None


# --- management (every change is an event in the book's stream; only the owner may change a book) ---------
# A request naming a book the user does not own gets ``not_found``, exactly as an unknown book: a user cannot
# probe another user's book ids.


class LoreDetachRequest(_Tenanted):
    """`mnemo.rpc.lore.detach.v1` request: the book no longer applies to these bots and/or that conversation."""

    user_id: Id = Field(..., description="the acting user; must be the book's owner")
    lorebook_id: Id = Field(...)
    bot_ids: list[Id] = Field(default_factory=list, max_length=1000)
    conversation: ConversationRef | None = Field(None)

    @model_validator(mode="after")
    def _some_target(self) -> LoreDetachRequest:
        if not self.bot_ids and self.conversation is None:
            raise ValueError("give `bot_ids` or `conversation` (or both)")
        return self


class LoreBookCreateRequest(_Tenanted):
    """`mnemo.rpc.lore.book.create.v1` request: an empty book (add entries with `entry.create`)."""

    owner_user_id: Id = Field(..., description="the user creating the book (its owner)")
    name: str = Field(..., min_length=1, max_length=512)
    description: str = Field("", max_length=20_000)
    lorebook_id: Id | None = Field(
        None, description="optional id; by default derived from owner and name, so a retried create is idempotent"
    )
    attach_to_bots: list[Id] = Field(default_factory=list, max_length=1000)


class LoreBookCreateReply(_Wire):
    lorebook_id: str
    created: bool = Field(..., description="false when the book already existed (a retry): nothing was recorded")


class LoreBookDeleteRequest(_Tenanted):
    """`mnemo.rpc.lore.book.delete.v1` request: entries, attachments and vectors all go."""

    user_id: Id = Field(..., description="the acting user; must be the book's owner")
    lorebook_id: Id = Field(...)


class LoreBookRenameRequest(_Tenanted):
    """`mnemo.rpc.lore.book.rename.v1` request: the book's new name (its export's name too)."""

    user_id: Id = Field(..., description="the acting user; must be the book's owner")
    lorebook_id: Id = Field(...)
    name: str = Field(..., min_length=1, max_length=512)


class LoreBookRenameReply(_Wire):
    lorebook_id: str
    name: str
    renamed: bool = Field(..., description="false when the book already had that name: nothing was recorded")


class LoreEntryCreateRequest(_Tenanted):
    """`mnemo.rpc.lore.entry.create.v1` request. ``entry`` takes World Info fields (camelCase as SillyTavern
    writes them, or snake_case) plus `activationMode` (`keyword`, `vector` or `hybrid`); unknown fields are
    refused. Without `uid` the next free uid is used; with a `uid` already in the book the request is refused,
    unless the entry is identical (a retry: nothing is recorded)."""

    user_id: Id = Field(..., description="the acting user; must be the book's owner")
    lorebook_id: Id = Field(...)
    entry: dict[str, Any] = Field(..., description="the entry's fields (defaults: SillyTavern's entry template)")


class LoreEntryUpdateRequest(_Tenanted):
    """`mnemo.rpc.lore.entry.update.v1` request: the given fields replace the entry's (others are kept)."""

    user_id: Id = Field(..., description="the acting user; must be the book's owner")
    lorebook_id: Id = Field(...)
    uid: int = Field(..., ge=0, le=MAX_UID)
    changes: dict[str, Any] = Field(..., min_length=1, description="fields to change, as in `entry.create`")


class LoreEntryReply(_Wire):
    """Reply of `entry.create` and `entry.update`: the entry as stored, in World Info shape."""

    lorebook_id: str
    uid: int
    entry: dict[str, Any]
    changed: bool = Field(..., description="false when the request changed nothing (nothing recorded)")


class LoreEntryDeleteRequest(_Tenanted):
    """`mnemo.rpc.lore.entry.delete.v1` request."""

    user_id: Id = Field(..., description="the acting user; must be the book's owner")
    lorebook_id: Id = Field(...)
    uid: int = Field(..., ge=0, le=MAX_UID)


class LoreDeleteReply(_Wire):
    """Reply of `entry.delete` and `book.delete`; deleting again answers `deleted: false`."""

    lorebook_id: str
    uid: int | None = None
    deleted: bool


class LoreDetachReply(LoreAttachReply):
    """`mnemo.rpc.lore.detach.v1` reply: what was asked to be detached (detaching twice is harmless)."""


class LoreListRequest(_Tenanted):
    """`mnemo.rpc.lore.list.v1` request: the tenant's books by name (all, one owner's, or those attached to one
    bot)."""

    owner_user_id: Id | None = Field(None, description="only this user's books")
    bot_id: Id | None = Field(None, description="only books attached to this bot")
    limit: int = Field(100, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=100_000)


class LoreBookItem(_Wire):
    lorebook_id: str
    name: str
    owner_user_id: str
    format: str = Field("", description="the format it was imported from (empty for a book made with book.create)")
    entries: int = Field(..., ge=0)
    bot_ids: list[str] = Field(default_factory=list, description="bots it is attached to")
    conversations: list[ConversationRef] = Field(default_factory=list, description="conversations it is attached to")
    version: int = Field(..., description="the book's version in the log (changes with every change)")


class LoreListReply(_Wire):
    """`mnemo.rpc.lore.list.v1` reply: ``total`` books match; this page starts at ``offset`` (by name, then id)."""

    books: list[LoreBookItem]
    total: int
    offset: int
    limit: int
