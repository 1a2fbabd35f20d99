"""Read an uploaded file into blocks of text with their heading path and page (pure, synchronous).

Run only in the parsing subprocess (``worker.py``), under its time and memory limits. Libraries, and why:

- PDF: ``pypdf`` (pure Python, maintained by the py-pdf org, BSD): text per page, the outline (bookmarks) for
  headings, and it reports encryption itself; no native code to crash the process on a hostile file.
- .docx: ``python-docx`` (paragraph styles give the headings); the zip is checked for a bomb first.
- Markdown: ``markdown-it-py`` (CommonMark, already a dependency of the stack) finds the real headings, not
  a ``#`` inside a code block.
- HTML: ``beautifulsoup4`` with the standard library's parser: tolerant of broken markup.
- Text: UTF-8 (and BOMs) first, else ``charset-normalizer`` (the maintained chardet successor, already
  installed with httpx' dependencies) guesses.

Every failure is a :class:`DocumentError` whose message is for the user who uploaded the file.
"""

from __future__ import annotations

import codecs
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

KINDS = ("text", "markdown", "html", "pdf", "docx")
_EXTENSIONS = {
    ".txt": "text",
    ".text": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
}
#: A .docx that expands past this, or more than ``_MAX_RATIO`` times its size, is refused as a zip bomb.
MAX_DOCX_EXPANDED = 200 * 1024**2
_MAX_RATIO = 100


class DocumentError(ValueError):
    """The file cannot be imported; the message says why, for the user who uploaded it."""


@dataclass(frozen=True)
class Block:
    text: str
    heading: str = ""  # the heading path, ``Part I > Chapter 3``
    page: int | None = None


@dataclass(frozen=True)
class Parsed:
    blocks: list[Block]
    pages: int  # 0 when the format has no pages


def kind_of(name: str) -> str:
    ext = Path(name).suffix.lower()
    if ext not in _EXTENSIONS:
        raise DocumentError(
            f"{name!r}: unsupported file type {ext or '(no extension)'!r}; mnemo reads .txt, .md, .html, .pdf and .docx"
        )
    return _EXTENSIONS[ext]


def _looks_like(head: bytes) -> str:
    if head.startswith(b"%PDF-"):
        return "a PDF"
    if head.startswith(b"PK\x03\x04"):
        return "a zip archive"
    if head[:8] == b"\x89PNG\r\n\x1a\n" or head[:3] == b"\xff\xd8\xff" or head[:6] in (b"GIF87a", b"GIF89a"):
        return "an image"
    return "text" if b"\x00" not in head[:4096] or head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else "binary"


def check_type(name: str, kind: str, head: bytes) -> None:
    """The content must be what the name says: a ``.pdf`` that is really a zip, or a ``.txt`` that is an image."""
    found = _looks_like(head)
    expected = {"pdf": "a PDF", "docx": "a zip archive"}.get(kind, "text")
    if found != expected:
        want = {"pdf": "a PDF", "docx": "a Word (.docx) file"}.get(kind, "text")
        raise DocumentError(f"{name!r} is named as {want} but its content is {found}")


def decode_text(raw: bytes) -> str:
    """UTF-8 (with or without BOM) and UTF-16/32 with a BOM exactly; otherwise charset-normalizer's best guess."""
    for bom, enc in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if raw.startswith(bom):
            return raw.decode(enc)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    matches = list(from_bytes(raw))
    if not matches:
        raise DocumentError("the file is not text in any encoding mnemo recognises")
    best = matches[0]
    # Western text in one of the Latin 8-bit code pages often decodes cleanly in several of them, and
    # charset-normalizer's tie-break then favours a rarer one (iso8859_14, cp1257): prefer Windows-1252, by
    # far the most common legacy encoding, when it reads about as cleanly as the best guess.
    western = next((m for m in matches if m.encoding == "cp1252" and m.chaos <= best.chaos + 0.1), None)
    return str(western or best)


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n")) if p.strip()]


def read_text(raw: bytes) -> Parsed:
    # Form feeds separate pages in text exported from a paged document: keep them as page numbers.
    pages = decode_text(raw).split("\f")
    paged = len(pages) > 1
    blocks = [Block(p, "", n if paged else None) for n, page in enumerate(pages, 1) for p in _paragraphs(page)]
    return Parsed(blocks, len(pages) if paged else 0)


def read_markdown(raw: bytes) -> Parsed:
    from markdown_it import MarkdownIt

    text = decode_text(raw).replace("\r\n", "\n")
    lines = text.split("\n")
    tokens = MarkdownIt("commonmark").parse(text)
    heads: list[tuple[int, int, str]] = []  # (first line, level, title)
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map is not None:
            heads.append((tok.map[0], int(tok.tag[1]), tokens[i + 1].content.strip()))
    blocks: list[Block] = []
    path: list[tuple[int, str]] = []
    starts = [h[0] for h in heads] + [len(lines)]
    blocks += [Block(p) for p in _paragraphs("\n".join(lines[: starts[0]]))]
    for n, (line, level, title) in enumerate(heads):
        path = [*[p for p in path if p[0] < level], (level, title)]
        heading = " > ".join(t for _, t in path)
        body = "\n".join(lines[line + 1 : starts[n + 1]])
        blocks += [Block(p, heading) for p in _paragraphs(body)]
    return Parsed(blocks, 0)


_HTML_BLOCKS = re.compile(r"^(h[1-6]|p|li|pre|blockquote|dt|dd|td|th|figcaption|caption)$")


def read_html(raw: bytes) -> Parsed:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(decode_text(raw), "html.parser")
    for junk in soup(["script", "style", "noscript", "template"]):
        junk.decompose()
    blocks: list[Block] = []
    path: list[tuple[int, str]] = []
    for el in soup.find_all(_HTML_BLOCKS):
        if any(_HTML_BLOCKS.match(a.name or "") for a in el.parents):
            continue  # its text is in the enclosing block already
        text = el.get_text(" ", strip=True)
        if not text:
            continue
        if re.fullmatch(r"h[1-6]", el.name):
            level = int(el.name[1])
            path = [*[p for p in path if p[0] < level], (level, text)]
            continue
        blocks.append(Block(text, " > ".join(t for _, t in path)))
    if not blocks:
        body = soup.get_text("\n")
        blocks = [Block(p) for p in _paragraphs(body)]
    return Parsed(blocks, 0)


def read_pdf(path: Path) -> Parsed:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted and not reader.decrypt(""):
            raise DocumentError("the PDF is password-protected; upload it without a password")
        outline = _pdf_outline(reader)
        blocks: list[Block] = []
        heading = ""
        for number, page in enumerate(reader.pages, 1):
            heading = outline.get(number, heading)
            blocks += [Block(p, heading, number) for p in _paragraphs(page.extract_text() or "")]
        pages = len(reader.pages)
    except DocumentError:
        raise
    except (PdfReadError, OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise DocumentError(f"the PDF is damaged or truncated and cannot be read ({type(exc).__name__})") from exc
    if pages and not blocks:
        raise DocumentError("the PDF has no text layer (a scanned document?); mnemo does not read text from images")
    return Parsed(blocks, pages)


def _pdf_outline(reader: object) -> dict[int, str]:
    """First page number -> the outline (bookmark) path that starts there; empty when the PDF has none."""
    out: dict[int, str] = {}

    def walk(items: list[object], trail: list[str]) -> None:
        last: list[str] = trail
        for item in items:
            if isinstance(item, list):
                walk(item, last)
                continue
            title = str(getattr(item, "title", "") or "").strip()
            last = [*trail, title]
            try:
                number = reader.get_destination_page_number(item) + 1  # type: ignore[attr-defined]
            except Exception:  # a broken bookmark is no reason to refuse the document
                continue
            out.setdefault(number, " > ".join(last))

    try:
        walk(list(reader.outline), [])  # type: ignore[attr-defined]
    except Exception:
        return {}
    return out


def _check_zip(path: Path) -> None:
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise DocumentError("the .docx is damaged or truncated (not a readable zip archive)") from exc
    expanded = sum(i.file_size for i in infos)
    if expanded > MAX_DOCX_EXPANDED or expanded > _MAX_RATIO * max(path.stat().st_size, 1):
        raise DocumentError(
            f"the .docx would expand to {expanded / 1024**2:,.0f} MB; it looks like a zip bomb and was not opened"
        )
    if "word/document.xml" not in {i.filename for i in infos}:
        raise DocumentError("the file is a zip archive but not a Word document (no word/document.xml)")


def read_docx(path: Path) -> Parsed:
    _check_zip(path)
    import docx

    try:
        document = docx.Document(str(path))
    except Exception as exc:  # python-docx raises many types on a broken package
        raise DocumentError(f"the .docx is damaged and cannot be read ({type(exc).__name__})") from exc
    blocks: list[Block] = []
    path_: list[tuple[int, str]] = []
    page = 1
    breaks = False
    for par in document.paragraphs:
        xml = par._p.xml
        n = xml.count('w:type="page"') + xml.count("lastRenderedPageBreak")
        page += n
        breaks = breaks or n > 0
        text = par.text.strip()
        style = (par.style.name if par.style is not None else "") or ""
        level = 0 if style == "Title" else int(m.group(1)) if (m := re.match(r"Heading (\d)", style)) else None
        if level is not None and text:
            path_ = [*[p for p in path_ if p[0] < level], (level, text)]
        elif text:
            blocks.append(Block(text, " > ".join(t for _, t in path_), page))
    for table in document.tables:
        for row in table.rows:
            text = " | ".join(c.text.strip() for c in row.cells if c.text.strip())
            if text:
                blocks.append(Block(text, "", None))
    if not breaks:
        blocks = [Block(b.text, b.heading, None) for b in blocks]
    return Parsed(blocks, page if breaks else 0)


def read(path: Path, name: str) -> Parsed:
    """The blocks of the file at ``path`` uploaded as ``name``; raises :class:`DocumentError`."""
    kind = kind_of(name)
    with path.open("rb") as f:
        head = f.read(8192)
    if not head:
        raise DocumentError("the file is empty")
    check_type(name, kind, head)
    if kind == "pdf":
        parsed = read_pdf(path)
    elif kind == "docx":
        parsed = read_docx(path)
    else:
        raw = path.read_bytes()
        parsed = {"text": read_text, "markdown": read_markdown, "html": read_html}[kind](raw)
    if not parsed.blocks:
        raise DocumentError("the file has no text")
    return parsed


__all__ = ["KINDS", "Block", "DocumentError", "Parsed", "check_type", "decode_text", "kind_of", "read"]
