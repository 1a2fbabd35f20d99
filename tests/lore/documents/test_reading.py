"""Reading uploaded files (``mnemo/services/lore/documents/reading.py``) on files made here: structure, pages,
encodings, and each bad input's reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemo.services.lore.documents.reading import DocumentError, Parsed, decode_text, read
from tests.lore.documents import files


def _read(tmp_path: Path, name: str, data: bytes) -> Parsed:
    path = tmp_path / "upload"
    path.write_bytes(data)
    return read(path, name)


def test_markdown_keeps_the_heading_path_and_ignores_hashes_in_code(tmp_path: Path) -> None:
    text = "Preface.\n\n# Dragons\n\nAbout dragons.\n\n## Red\n\nThey breathe fire.\n\n```\n# not a heading\n```\n\n# Elves\n\nTall."
    parsed = _read(tmp_path, "lore.md", text.encode())
    assert [(b.heading, b.text) for b in parsed.blocks] == [
        ("", "Preface."),
        ("Dragons", "About dragons."),
        ("Dragons > Red", "They breathe fire."),
        ("Dragons > Red", "```\n# not a heading\n```"),
        ("Elves", "Tall."),
    ]
    assert parsed.pages == 0


def test_html_blocks_under_their_headings_without_scripts(tmp_path: Path) -> None:
    html = (
        "<html><head><style>p{}</style><script>alert('x')</script></head><body>"
        "<h1>Atlas</h1><p>The world.</p><h2>Seas</h2><ul><li>North <b>Sea</b></li></ul><p>Cold.</p></body></html>"
    )
    parsed = _read(tmp_path, "atlas.html", html.encode())
    assert [(b.heading, b.text) for b in parsed.blocks] == [
        ("Atlas", "The world."),
        ("Atlas > Seas", "North Sea"),
        ("Atlas > Seas", "Cold."),
    ]


def test_pdf_pages_and_outline_headings(tmp_path: Path) -> None:
    data = files.pdf(["First page words.", "Second page words.", "Third page words."], outline=[(2, "Chapter Two")])
    parsed = _read(tmp_path, "book.pdf", data)
    assert parsed.pages == 3
    assert [(b.page, b.heading, b.text) for b in parsed.blocks] == [
        (1, "", "First page words."),
        (2, "Chapter Two", "Second page words."),
        (3, "Chapter Two", "Third page words."),
    ]


def test_docx_headings_and_page_breaks(tmp_path: Path) -> None:
    data = files.docx(
        [("Heading 1", "Rules"), ("Normal", "Roll a die."), ("Heading 2", "Combat"), ("Normal", "Hit hard.")],
        page_break_before=2,
    )
    parsed = _read(tmp_path, "rules.docx", data)
    assert [(b.heading, b.page, b.text) for b in parsed.blocks] == [
        ("Rules", 1, "Roll a die."),
        ("Rules > Combat", 2, "Hit hard."),
    ]


@pytest.mark.parametrize(
    ("encoding", "text"),
    [
        ("utf-8", "Zoë's café — naïve façade"),
        ("utf-16", "Ünïcödé in UTF-16 with its BOM"),
        ("cp1252", "Café déjà vu, l'été où nous étions à Paris, près de la fenêtre ouverte."),
        (
            "cp1252",
            "Il était une fois, dans un château près de la forêt, une princesse qui rêvait d'été. « Où "
            "allez-vous ? » demandait-elle aux élèves qui allaient à l'école, où le maître enseignait.",
        ),
        ("koi8-r", "Жили-были старик со старухой у самого синего моря; они жили в ветхой землянке."),
        ("shift_jis", "これは日本語の文章です。古い符号化で保存されました。竜の伝説について。"),
    ],
)
def test_text_in_any_encoding(encoding: str, text: str) -> None:
    assert decode_text(text.encode(encoding)) == text


def test_text_form_feeds_are_pages(tmp_path: Path) -> None:
    parsed = _read(tmp_path, "paged.txt", b"one\n\ntwo\fthree")
    assert [(b.page, b.text) for b in parsed.blocks] == [(1, "one"), (1, "two"), (2, "three")]


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("secret.pdf", files.encrypted_pdf("Hidden."), "password-protected"),
        ("scan.pdf", files.blank_pdf(), "no text layer"),
        ("cut.pdf", files.pdf(["A page of text. " * 40])[:700], "damaged or truncated"),
        ("bomb.docx", files.zip_bomb(50), "zip bomb"),
        ("broken.docx", b"PK\x03\x04" + b"garbage" * 50, "damaged or truncated"),
        ("notes.pdf", b"Just some plain text, not a PDF at all.", "named as a PDF but its content is text"),
        ("report.docx", files.pdf(["A PDF in disguise."]), r"named as a Word \(.docx\) file but its content is a PDF"),
        ("photo.txt", b"\x89PNG\r\n\x1a\n" + b"\0" * 64, "named as text but its content is an image"),
        ("empty.md", b"", "empty"),
        ("tool.exe", b"MZ", "unsupported file type"),
    ],
)
def test_bad_input_has_a_reason_for_the_user(tmp_path: Path, name: str, data: bytes, reason: str) -> None:
    with pytest.raises(DocumentError, match=reason):
        _read(tmp_path, name, data)
