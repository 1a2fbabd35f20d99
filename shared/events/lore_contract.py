"""Public wire contract v1 of lorebooks: import, export and attach (request-reply).

Every request is answered with its reply model or with ``ErrorReply`` (codes: ``bad_request`` for an invalid
request or a file that is not a readable lorebook, with the reason; ``not_found`` for an unknown book in the
tenant; ``internal``). Never change a published field's meaning; add a new version of the subject instead.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from shared.events.contract import Id, _Tenanted, _Wire

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
