"""The query a context request will search with, guessed before its history is read, so the query embedding
(the longest part of a request) starts at once instead of after the conversation's state and history reads.

The query (``search/query.py``) is the user's message without the names of the conversation's participants
as the history shows them. The history is read first, but its participants rarely change from one request of
a conversation to the next: the guess takes them from the conversation's previous request on this replica.
The gatherer starts embedding the guess at once; when the real query, computed from the history as before,
is the same text, the per-request memo (``memo.py``) hands the search that vector, and otherwise the real
query is embedded as before (one wasted embedding, when a new participant's name is in the message). A short
message (a follow-up, whose query borrows history text) and a conversation not seen yet are not guessed.
Names are kept per (tenant, user, conversation): nothing crosses conversations.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from mnemo.services.context_assembler.items import ChatLine
from mnemo.services.context_assembler.search.query import SHORT_QUERY_WORDS, participant_names, without_names
from mnemo.shared.sparse import tokens
from mnemo_client.wire.contract import ContextAssembleRequest

#: Conversations whose participants a replica remembers (least recently used dropped first).
CONVERSATIONS = 4096

_Key = tuple[str, str, str]


def _key(req: ContextAssembleRequest) -> _Key:
    return (req.tenant_id, req.user_id, req.conversation_id)


class QueryGuess:
    def __init__(self, size: int = CONVERSATIONS) -> None:
        self._size = size
        self._names: OrderedDict[_Key, frozenset[str]] = OrderedDict()

    def guess(self, req: ContextAssembleRequest) -> str | None:
        """What ``query_text`` will return if the history's participants are those of the conversation's
        previous request; None when that is unknown or the query needs the history itself."""
        names = self._names.get(_key(req))
        if names is None or len(tokens(req.user_message)) < SHORT_QUERY_WORDS:
            return None
        self._names.move_to_end(_key(req))
        return without_names(req.user_message, set(names))

    def learn(self, req: ContextAssembleRequest, history: Sequence[ChatLine]) -> None:
        """The participants of the conversation as this request's history shows them."""
        self._names[_key(req)] = frozenset(participant_names(history))
        self._names.move_to_end(_key(req))
        while len(self._names) > self._size:
            self._names.popitem(last=False)
