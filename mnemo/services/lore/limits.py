"""The lore service's share of the per-tenant limits (``MNEMO_LIMITS__*``): a book's entries and size, and
the books attached to one bot. Refusals raise ``mnemo.shared.limits`` errors, answered with their own codes.

A book's size is the UTF-8 size of its entries' normalised JSON (what the context-assembler loads and
compiles), not of the uploaded file: a PNG card's picture does not count. The books-per-bot count is read
before the attachment is appended, so two concurrent attachments may pass it by one each.
"""

from __future__ import annotations

from collections.abc import Iterable

from mnemo.shared.limits import BookTooLarge, TooManyBooks
from mnemo.shared.lore.model import LoreEntry
from mnemo.shared.readmodels.ports import LorePort
from mnemo.shared.settings import TenantLimits


def entry_bytes(entry: LoreEntry) -> int:
    return len(entry.model_dump_json().encode())


def check_book(entries: Iterable[LoreEntry], limits: TenantLimits) -> None:
    """Raises ``BookTooLarge`` when the entries are more, or larger, than the tenant's limits."""
    count = size = 0
    for entry in entries:
        count += 1
        size += entry_bytes(entry)
    if count > limits.max_book_entries:
        raise BookTooLarge(
            f"the book has {count} entries, over the tenant's {limits.max_book_entries} "
            "(MNEMO_LIMITS__MAX_BOOK_ENTRIES)"
        )
    if size > limits.max_book_bytes:
        raise BookTooLarge(
            f"the book's entries are {size} bytes of JSON, over the tenant's {limits.max_book_bytes} "
            "(MNEMO_LIMITS__MAX_BOOK_BYTES)"
        )


def with_entry(entries: Iterable[LoreEntry], entry: LoreEntry) -> list[LoreEntry]:
    """The book's entries once ``entry`` is written (added, or replacing the entry with its uid)."""
    return [e for e in entries if e.uid != entry.uid] + [entry]


async def check_attach(
    read_model: LorePort, tenant_id: str, lorebook_id: str, bot_ids: Iterable[str], limits: TenantLimits
) -> None:
    """Raises ``TooManyBooks`` when attaching ``lorebook_id`` would give a bot more live books than allowed."""
    for bot_id in sorted(set(bot_ids)):
        books = {ref.lorebook_id for ref in await read_model.attached(tenant_id, bot_id)}
        if lorebook_id not in books and len(books) + 1 > limits.max_books_per_bot:
            raise TooManyBooks(
                f"bot {bot_id!r} already has {len(books)} books attached, the tenant's limit "
                f"(MNEMO_LIMITS__MAX_BOOKS_PER_BOT: {limits.max_books_per_bot})"
            )
