"""Test files made in the tests: PDFs (fpdf2 writes them, pypdf encrypts), .docx (python-docx) and bad ones."""

from __future__ import annotations

import io
import zipfile

from fpdf import FPDF
from pypdf import PdfReader, PdfWriter


def pdf(pages: list[str], *, outline: list[tuple[int, str]] | None = None) -> bytes:
    """One page per text (Helvetica, so latin-1 only); ``outline``: (page from 1, title) bookmarks."""
    doc = FPDF()
    doc.set_font("Helvetica", size=11)
    titles = dict(outline or [])
    for number, text in enumerate(pages, 1):
        doc.add_page()
        if number in titles:
            doc.start_section(titles[number])
        doc.multi_cell(0, 6, text)
    return bytes(doc.output())


def blank_pdf(pages: int = 2) -> bytes:
    """Pages with no text layer at all: what a scanner without OCR produces."""
    doc = FPDF()
    for _ in range(pages):
        doc.add_page()
        doc.rect(20, 20, 100, 150, style="F")
    return bytes(doc.output())


def encrypted_pdf(text: str, password: str = "s3cret") -> bytes:
    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(pdf([text]))).pages:
        writer.add_page(page)
    writer.encrypt(user_password=password, owner_password=password)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def docx(paragraphs: list[tuple[str, str]], *, page_break_before: int | None = None) -> bytes:
    """``(style, text)`` paragraphs (``Heading 1``, ``Normal``...); a page break before paragraph n."""
    import docx as python_docx
    from docx.enum.text import WD_BREAK

    document = python_docx.Document()
    for n, (style, text) in enumerate(paragraphs):
        if n == page_break_before:
            document.add_paragraph().add_run().add_break(WD_BREAK.PAGE)
        document.add_paragraph(text, style=style)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def zip_bomb(expanded_mb: int = 300) -> bytes:
    """A small zip named like a .docx whose one member expands to ``expanded_mb`` MB of zeros."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        with zf.open("word/document.xml", "w") as member:
            block = b"\0" * (1024 * 1024)
            for _ in range(expanded_mb):
                member.write(block)
    return out.getvalue()
