"""The lore activation test (``mnemo.rpc.lore.test_activation.v1``): which entries a chat text fires and why.

It runs the scan a context runs (the same loader, compiled lore, vector similarity and scan budget) on a fresh
chat, as a dry run: no timed state is read or written, and the seed is fixed, so a game master can try a text
again and again and see the same answer. Books come from the request's ids or from the bot's (and the
conversation's) attachments, always looked up under the request's tenant.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.services.context_assembler.items import ChatLine
from mnemo.services.context_assembler.lore.activate import why_text
from mnemo.services.context_assembler.lore.engine.activation import ScanMessage, ScanRequest, activate
from mnemo.services.context_assembler.lore.engine.compiled import ActiveBook
from mnemo.services.context_assembler.lore.engine.scan_types import ActivatedEntry, ActivationResult, ScanBudgetExceeded
from mnemo.services.context_assembler.lore.loader import LoreLoader
from mnemo.services.context_assembler.lore.scans import ScanRefused
from mnemo_client.wire.lore_activation_contract import (
    ActivatedLoreEntry,
    LoreTestActivationReply,
    LoreTestActivationRequest,
)

USER = "User"  # the name the text's author goes by (`{{user}}`): a test has no persona
SEED = "lore-test"  # a fixed seed: an entry's probability roll is the same on every try


class BookNotFound(LookupError):
    """A named book is not one of the tenant's."""


async def try_activation(loader: LoreLoader, req: LoreTestActivationRequest) -> LoreTestActivationReply:
    books = await _books(loader, req)
    history = [ChatLine(f"h{i}", i, "user", USER, text) for i, text in enumerate(req.history)]
    degraded: list[str] = []
    similar = await loader.similar_to(req.tenant_id, req.text, books, history, degraded)
    character = req.bot_id or ""
    messages = [ScanMessage(USER, text) for text in [*req.history, req.text]]

    ids = [b.book_id.split("@", 1)[0] for b in books]
    scanned = sum(1 for b in books for e in b.book.entries if not e.disable)
    try:
        lore = await loader.compiled(req.tenant_id, books, {"char": character, "user": USER})

        def scan(deadline: float) -> ActivationResult:
            request = ScanRequest(
                messages=messages,
                max_context=req.max_tokens,
                seed=SEED,
                character=character or None,
                forced=frozenset(similar),
                deadline=deadline,
                dry_run=True,
            )
            return activate(lore, request)

        result = await loader.scan(req.tenant_id, scan)
    except (ScanRefused, ScanBudgetExceeded, TimeoutError):  # compiling or scanning past the budget
        return LoreTestActivationReply(
            entries=[], lorebook_ids=ids, scanned_entries=scanned, budget=0, tokens_used=0, overflowed=False,
            degraded=[*degraded, "lore_scan_budget"],
        )  # fmt: skip
    entries = [_entry(e, similar) for e in result.entries]
    return LoreTestActivationReply(
        entries=entries,
        lorebook_ids=ids,
        scanned_entries=scanned,
        budget=result.budget,
        tokens_used=result.tokens_used,
        overflowed=result.overflowed,
        degraded=degraded,
    )


async def _books(loader: LoreLoader, req: LoreTestActivationRequest) -> Sequence[ActiveBook]:
    if req.lorebook_ids:
        found = await loader.named_books(req.tenant_id, req.lorebook_ids)
        missing = [i for i in req.lorebook_ids if i not in found]
        if missing:
            raise BookNotFound(f"no lorebook {missing[0]!r} in this tenant")
        return [found[i] for i in dict.fromkeys(req.lorebook_ids)]
    assert req.bot_id is not None  # the request's validator asks for books or a bot
    return await loader.attached_books(req.tenant_id, req.bot_id, req.user_id, req.conversation_id)


def _entry(e: ActivatedEntry, similar: dict[str, float]) -> ActivatedLoreEntry:
    return ActivatedLoreEntry(
        lorebook_id=e.book_id.split("@", 1)[0],
        uid=e.entry.uid,
        comment=e.entry.comment,
        content=e.content,
        why=why_text(e, similar),
        key=e.why.key if e.why.kind == "key" else None,
        secondary=list(e.why.secondary),
        position=int(e.entry.position),
        order=float(e.entry.order),
        tokens=e.tokens,
        placed=e.placed,
    )
