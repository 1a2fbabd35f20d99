"""A memory's short title, derived from its text when nobody gave one (pure).

Every memory has a type and a short title (the memory library of the seeds lists them so): the memory API
derives one when a client gives none, the summarizer for each span it summarizes and the extractor for each
fact. The title is the text's first sentence, cut at a word boundary to :data:`MAX_WORDS` words and
:data:`MAX_CHARS` characters, with an ellipsis when cut: readable in a list, never a second copy of the text.
"""

from __future__ import annotations

import re

MAX_WORDS = 8
MAX_CHARS = 80
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s|\n")
_TRIM = " \t\r\n.,;:-–—\"'“”‘’()[]"


def short_title(text: str) -> str:
    """The first sentence of ``text``, at most :data:`MAX_WORDS` words and :data:`MAX_CHARS` characters
    (``…`` when cut); ``"Untitled"`` for a text with no words."""
    first = _SENTENCE_END.split(text.strip(), maxsplit=1)[0].strip(_TRIM)
    words = first.split()
    if not words:
        return "Untitled"
    cut = len(words) > MAX_WORDS
    title = " ".join(words[:MAX_WORDS])
    if len(title) > MAX_CHARS:
        title = title[:MAX_CHARS].rsplit(" ", 1)[0] if " " in title[:MAX_CHARS] else title[:MAX_CHARS]
        cut = True
    title = title.strip(_TRIM) or words[0][:MAX_CHARS]
    return f"{title}…" if cut else title
