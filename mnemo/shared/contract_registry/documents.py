"""Documents as lore: upload a file (Object Store bucket MNEMO_UPLOADS or inline), follow its import, list, delete."""

from __future__ import annotations

from mnemo.shared import subjects
from mnemo.shared.contract_registry.operation import LORE_ERRORS, Operation, rpc
from mnemo_client.wire import document_contract as dc

_STATE = {
    "tenant_id": "t1",
    "document_id": "...",
    "book_id": "...",
    "owner_user_id": "u1",
    "name": "Dragon Compendium.pdf",
    "status": "completed",
    "version": 1,
    "active_version": 1,
    "pages": 412,
    "chunks": 388,
    "tokens": 351020,
    "progress": {"pages_read": 412, "chunks_recorded": 388},
    "reason": None,
}

OPERATIONS: tuple[Operation, ...] = (
    # --- documents ----------------------------------------------------------------------------------------------
    rpc(
        "lore.document.import",
        subjects.LORE_DOCUMENT_IMPORT,
        dc.DocumentImportRequest,
        dc.DocumentImportReply,
        "lore",
        "Import a document (text, Markdown, HTML, PDF, .docx) as lore; the reply comes at once, the import runs on.",
        {
            "tenant_id": "t1",
            "owner_user_id": "u1",
            "name": "Dragon Compendium.pdf",
            "object": "t1/uploads/dragon-compendium.pdf",
            "attach_to_bots": ["maren"],
        },
        {"book_id": "...", "document_id": "...", "version": 1, "status": "accepted"},
        errors=LORE_ERRORS,
        note="or `data_base64` for a small file; `document_id` to replace; the state follows on "
        "`mnemo.lore.document.status.v1`",
    ),
    rpc(
        "lore.document.get",
        subjects.LORE_DOCUMENT_GET,
        dc.DocumentGetRequest,
        dc.DocumentState,
        "lore",
        "A document's state: status, pages, chunks, progress, and the reason of a failed import.",
        {"tenant_id": "t1", "document_id": "..."},
        _STATE,
        errors=LORE_ERRORS,
    ),
    rpc(
        "lore.document.list",
        subjects.LORE_DOCUMENT_LIST,
        dc.DocumentListRequest,
        dc.DocumentListReply,
        "lore",
        "The tenant's documents (one owner's, or one book's).",
        {"tenant_id": "t1", "owner_user_id": "u1", "book_id": None},
        {"documents": [_STATE]},
        errors=LORE_ERRORS,
    ),
    rpc(
        "lore.document.delete",
        subjects.LORE_DOCUMENT_DELETE,
        dc.DocumentDeleteRequest,
        dc.DocumentDeleteReply,
        "lore",
        "Delete a document: every chunk, point and stored byte goes.",
        {"tenant_id": "t1", "user_id": "u1", "document_id": "..."},
        {"document_id": "...", "deleted": True},
        errors=LORE_ERRORS,
    ),
)
