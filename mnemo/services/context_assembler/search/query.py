"""The text and the lexical vector a context request searches with (pure).

The query is the user's message; a short follow-up takes its topic from the last history messages
(:func:`query_text`), and the participants' names are taken out. The lexical side (``mnemo/shared/sparse.py``)
weighs the message's own words above those borrowed from the history (:func:`query_sparse`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mnemo.services.context_assembler.items import ChatLine
from mnemo.services.context_assembler.search.names import spelled_names
from mnemo.shared.sparse import query_weight, terms_vector, tokens
from mnemo.shared.vectors.port import SparseVector
from mnemo_client.wire.contract import ContextAssembleRequest

#: A user message with fewer content words than this is a follow-up ("Why?", "tell me more"): the query then
#: takes its topic from the last history messages, at ``HISTORY_WEIGHT`` of the message's own words.
SHORT_QUERY_WORDS = 3
HISTORY_MESSAGES = 2
HISTORY_WEIGHT = 0.3


def participant_names(history: Sequence[ChatLine]) -> set[str]:
    """First names (lowercased, 3 letters or more) of who speaks in the history: authors and personas."""
    names: set[str] = set()
    for line in history:
        for name in (line.author_name, line.persona_name):
            first = name.split()[0].lower() if name.split() else ""
            if len(first) >= 3:
                names.add(first)
    return names


def without_names(text: str, names: set[str]) -> str:
    """``text`` without the participants' names (and their possessive ``'s``), misspelt ones too
    (``names.spelled_names``); unchanged when nothing else would be left."""
    if not names:
        return text
    written = set(names) | set(spelled_names(text, names))
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(written))) + r")(?:['’]s)?\b", re.IGNORECASE)
    stripped = " ".join(pattern.sub(" ", text).split())
    return stripped if tokens(stripped) else text


def query_text(req: ContextAssembleRequest, history: Sequence[ChatLine]) -> str:
    """The text the search embeds: the user's message; a short one (a follow-up such as "why?") after the
    last ``HISTORY_MESSAGES`` history messages, which carry its topic; an empty one: the last user message of
    the history. A standalone message is searched alone: history words would only dilute it.

    The names of the conversation's participants (as the history shows them) are taken out: in their own
    conversation they carry no topic, and they pull the query towards greetings that name them ("Hey
    Kate!") rather than what that person said (their own messages never name them). Who is asked about is
    used by the ranking instead (``ranking.named_participant``, from the unchanged user message)."""
    names = participant_names(history)
    if not req.user_message.strip():
        last = next((h.content for h in reversed(history) if h.role == "user" and h.content.strip()), "")
        return without_names(last, names)
    if len(tokens(req.user_message)) >= SHORT_QUERY_WORDS:
        return without_names(req.user_message, names)
    recent = [h.content for h in history[-HISTORY_MESSAGES:] if h.content.strip()]
    return without_names("\n".join([*recent, req.user_message]), names)


def query_sparse(req: ContextAssembleRequest, text: str) -> SparseVector:
    """The lexical query: the words of ``text`` (see :func:`query_text`), those of the user's own message at
    weight 1, those only from the history at ``HISTORY_WEIGHT``, each times its ``mnemo.shared.sparse.query_weight``
    (hiragana-only terms weigh less)."""
    own = set(tokens(req.user_message))
    return terms_vector({t: (1.0 if not own or t in own else HISTORY_WEIGHT) * query_weight(t) for t in tokens(text)})
