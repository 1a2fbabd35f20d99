"""Lorebooks: import, export, attachment and management of books and entries."""

from __future__ import annotations

from mnemo.shared import subjects
from mnemo.shared.contract_registry.operation import LORE_ERRORS, Operation, rpc
from mnemo_client.wire import lore_contract as lc

_T = {"tenant_id": "t1"}
_TU = {"tenant_id": "t1", "user_id": "u1"}
_ENTRY = {"key": ["Kestrel"], "content": "The Kestrel is an airship."}

OPERATIONS: tuple[Operation, ...] = (
    # --- lore --------------------------------------------------------------------------------------------------
    rpc(
        "lore.import",
        subjects.LORE_IMPORT,
        lc.LoreImportRequest,
        lc.LoreImportReply,
        "lore",
        "Import a lorebook or character card file (JSON or base64 bytes); idempotent for the same owner, name and file.",
        {
            **_T,
            "owner_user_id": "u1",
            "name": "Kestrel lore",
            "format": "auto",
            "data": {"entries": {"0": {"uid": 0, **_ENTRY}}},
            "attach_to_bots": ["maren"],
        },
        {
            "lorebook_id": "...",
            "entries": 1,
            "format": "sillytavern",
            "warnings": [{"uid": 3, "field": "position", "message": "position: 10 is not a valid position; ..."}],
        },
        errors=LORE_ERRORS,
        note="or `data_base64` for PNG cards and other files",
    ),
    rpc(
        "lore.export",
        subjects.LORE_EXPORT,
        lc.LoreExportRequest,
        lc.LoreExportReply,
        "lore",
        "A book as a SillyTavern World Info file that imports back to the same entries.",
        {**_T, "lorebook_id": "..."},
        {"lorebook_id": "...", "name": "...", "data": {"entries": {}}},
        errors=LORE_ERRORS,
    ),
    rpc(
        "lore.list",
        subjects.LORE_LIST,
        lc.LoreListRequest,
        lc.LoreListReply,
        "lore",
        "The tenant's books by name: all, one owner's, or those attached to one bot.",
        {**_T, "owner_user_id": None, "bot_id": "maren", "limit": 100, "offset": 0},
        {
            "books": [
                {
                    "lorebook_id": "...",
                    "name": "Kestrel lore",
                    "owner_user_id": "u1",
                    "format": "sillytavern",
                    "entries": 1,
                    "bot_ids": ["maren"],
                    "conversations": [],
                    "version": 2,
                }
            ],
            "total": 1,
            "offset": 0,
            "limit": 100,
        },
        errors=LORE_ERRORS,
        note="`owner_user_id`, `bot_id`: optional filters",
    ),
    rpc(
        "lore.attach",
        subjects.LORE_ATTACH,
        lc.LoreAttachRequest,
        lc.LoreAttachReply,
        "lore",
        "Attach a book to bots and/or one conversation; attaching twice is harmless.",
        {**_T, "lorebook_id": "...", "bot_ids": ["maren"], "conversation": {"user_id": "u1", "conversation_id": "c1"}},
        errors=LORE_ERRORS,
        note="bots, a conversation, or both",
    ),
    rpc(
        "lore.detach",
        subjects.LORE_DETACH,
        lc.LoreDetachRequest,
        lc.LoreDetachReply,
        "lore",
        "The book no longer applies to these bots and/or that conversation (the book's owner only).",
        {**_TU, "lorebook_id": "...", "bot_ids": ["maren"], "conversation": None},
        {"lorebook_id": "...", "bot_ids": ["maren"], "conversation": None},
        errors=LORE_ERRORS,
        note="the book's owner only, as for every change below",
    ),
    rpc(
        "lore.book.create",
        subjects.LORE_BOOK_CREATE,
        lc.LoreBookCreateRequest,
        lc.LoreBookCreateReply,
        "lore",
        "An empty book (add entries with lore.entry.create); a retried create is idempotent.",
        {**_T, "owner_user_id": "u1", "name": "Kestrel lore", "description": "", "attach_to_bots": ["maren"]},
        {"lorebook_id": "...", "created": True},
        errors=LORE_ERRORS,
        note="`created: false` for a retry",
    ),
    rpc(
        "lore.book.delete",
        subjects.LORE_BOOK_DELETE,
        lc.LoreBookDeleteRequest,
        lc.LoreDeleteReply,
        "lore",
        "Delete a book: its entries, attachments and vectors all go.",
        {**_TU, "lorebook_id": "..."},
        {"lorebook_id": "...", "uid": None, "deleted": True},
        errors=LORE_ERRORS,
    ),
    rpc(
        "lore.entry.create",
        subjects.LORE_ENTRY_CREATE,
        lc.LoreEntryCreateRequest,
        lc.LoreEntryReply,
        "lore",
        "Add an entry (World Info fields plus activationMode) to a book.",
        {**_TU, "lorebook_id": "...", "entry": {**_ENTRY, "activationMode": "hybrid"}},
        {"lorebook_id": "...", "uid": 1, "entry": {"...": "the World Info entry"}, "changed": True},
        errors=LORE_ERRORS,
    ),
    rpc(
        "lore.entry.update",
        subjects.LORE_ENTRY_UPDATE,
        lc.LoreEntryUpdateRequest,
        lc.LoreEntryReply,
        "lore",
        "Change some fields of an entry (the others are kept).",
        {**_TU, "lorebook_id": "...", "uid": 1, "changes": {"content": "...", "activationMode": "vector"}},
        errors=LORE_ERRORS,
        note="reply as `entry.create`; `changed: false` when nothing changed",
    ),
    rpc(
        "lore.entry.delete",
        subjects.LORE_ENTRY_DELETE,
        lc.LoreEntryDeleteRequest,
        lc.LoreDeleteReply,
        "lore",
        "Delete an entry; deleting again answers `deleted: false`.",
        {**_TU, "lorebook_id": "...", "uid": 1},
        {"lorebook_id": "...", "uid": 1, "deleted": True},
        errors=LORE_ERRORS,
    ),
)
