"""Other names a participant goes by, read from how the conversation addresses them (pure).

People are often asked about by a name that is not their account's: REALTALK's "Emi" introduces herself as
Kate ("I'm Kate") and is greeted as Kate ("Hey Kate!", "Thank you Kate"), and questions then ask "What does
Kate cook?". Exact and misspelt names (``names.py``) miss that, so the ranking would not know who is asked
about. :func:`aliases` finds such names in the retrieved messages themselves, without a model:

- a capitalised word used to address someone (after a greeting or an interjection, "Hey Kate", "Thank you
  Kate", "Wow Kate"; set off by a comma before and ``!``/``?``/``.``/the end after, ", Kate!"; or opening the
  message followed by a comma or ``!``, "Kate, look") in a message of one author names the OTHER author, when
  exactly two authors wrote the messages (in a group the addressee is unknown, so nothing is inferred);
- "I'm Kate", "I am Kate", "my name is Kate", "call me Kate" names the author who wrote it (counts twice);
- a name is kept only with at least ``MIN_VOTES`` votes, all for one author, never written by that author
  except to introduce themselves (a third person is talked about by both; one is rarely addressed), and never
  an author's own first name.

It only names who a question is about (a boost in ``ranking.py``, never a filter), from messages the speaking
bot witnessed (the pool is filtered inside the query): it cannot reveal anything.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from mnemo.services.context_assembler.search.text_cache import per_text

__all__ = ["MIN_VOTES", "aliases", "named_by_alias"]

MIN_VOTES = 2

_NAME = r"([A-Z][\w'’-]{2,})"
_GREETING = (
    r"hi|hey|hello|hiya|dear|thanks|thank you|bye|goodbye|good morning|good night|good evening|morning|night|"
    r"congrats|congratulations|welcome|sorry|wow|oh|aww|yes|yeah|haha|ok|okay|well|love you|miss you"
)
_ADDRESSED = (
    re.compile(rf"(?:^|[.!?]\s+|\s)(?i:{_GREETING})\s*,?\s+{_NAME}\b"),
    re.compile(rf",\s*{_NAME}\s*(?:[!?.]|$)"),
    re.compile(rf"^\s*{_NAME}\s*[,!]"),
)
_SELF = re.compile(rf"\b(?i:i'?m|i’m|i am|my name is|my name's|call me)\s+{_NAME}\b")
_WORD = re.compile(r"\w+", re.UNICODE)


def _first(author: str) -> str:
    words = _WORD.findall(author.lower())
    return words[0] if words else ""


#: Lines whose names are remembered (the ranking reads the same candidates again on a conversation's next
#: request); a pure function of the text.
LINES = 8192


@per_text(LINES)
def _names_in(text: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The names ``text`` introduces its author by, those it addresses someone by (not introduced), and its
    other words (lowercased, not introduced)."""
    introduced = frozenset(m.group(1).lower() for m in _SELF.finditer(text))
    addressed = frozenset(m.group(1).lower() for pattern in _ADDRESSED for m in pattern.finditer(text))
    words = frozenset(w.lower() for w in _WORD.findall(text))
    return introduced, addressed - introduced, words - introduced


def aliases(lines: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``{alias (lowercased): author}`` from ``(author, text)`` lines (see the module); empty unless exactly
    two authors wrote them."""
    lines = [(a, t) for a, t in lines if a]
    authors = sorted({a for a, _ in lines})
    if len(authors) != 2:
        return {}
    other = {authors[0]: authors[1], authors[1]: authors[0]}
    own = {_first(a) for a in authors}
    votes: dict[str, Counter[str]] = {}
    written: dict[str, set[str]] = {a: set() for a in authors}
    for author, text in lines:
        introduced, addressed, words = _names_in(text)
        for name in introduced:
            votes.setdefault(name, Counter())[author] += 2
        for name in addressed:
            votes.setdefault(name, Counter())[other[author]] += 1
        written[author] |= words
    found: dict[str, str] = {}
    for name, by in votes.items():
        if name in own or len(by) != 1:
            continue
        [(author, n)] = by.items()
        if n >= MIN_VOTES and name not in written[author]:
            found[name] = author
    return found


def named_by_alias(query: str, known: dict[str, str]) -> Sequence[str]:
    """The authors ``query`` names by one of ``known`` aliases (as words, any case), in query order."""
    out: list[str] = []
    for word in _WORD.findall(query.lower()):
        author = known.get(word)
        if author is not None and author not in out:
            out.append(author)
    return out
