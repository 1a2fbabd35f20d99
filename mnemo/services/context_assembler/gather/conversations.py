"""The messages a replica read of each conversation, kept while the log shows only new messages since.

Reading the history window is the costliest read of a context request: 40 decrypted messages (about
0.5-1 ms of SecantusDB per document, 25-40 ms in all on a loaded machine, measured on 2026-11-26), and the
next request of the conversation asks for the same window plus the one or two messages written since.

The version check: every change of a conversation is an event on its stream, and the conversation's state
(read anyway, once per request) carries the stream's ``version`` and ``message_count``. A new message moves
both by one; an edit, a deletion, a swipe moves only the version. So when the state moved as many versions as
it gained messages since the messages were kept, nothing kept changed: the history is the kept window plus
the messages from the kept count on (one small range read), and a message read by id before is the same.
Otherwise everything kept of the conversation is dropped and read again. Kept per (conversation, speaking
bot), since what a bot may see is part of what is kept; at most :data:`CONVERSATIONS` conversations per
replica. A conversation whose state is gone (erased) is dropped.

Messages read by id (the retrieved ones) are bounded replica-wide, :data:`LINES` least recently used across
all conversations, not per conversation: a long conversation's hits spread over thousands of messages, and a
per-conversation bound of 256 (before 2026-11-27) kept too few of them to hit (issue 26). Each conversation
notes which of its lines are kept, so dropping the conversation drops them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from mnemo.services.context_assembler.items import ChatLine
from mnemo.shared.aggregates.conversation import ConversationState

#: Conversations whose messages a replica keeps (least recently used dropped first).
CONVERSATIONS = 1024
#: Messages read by id kept per replica besides the windows (the retrieved ones of recent requests), least
#: recently used dropped first. About 0.8 KB each with 120-character texts and uuid ids (tracemalloc, 2026-11-27):
#: 16,384 lines are about 13 MB, some 30 MB if every text were 1,000 characters.
LINES = 16384

Key = tuple[str, str, str, str]  # tenant, user, conversation, speaking bot
ReadRange = Callable[[int, int | None], Awaitable[list[ChatLine]]]  # [start, end) visible live lines
ReadRecent = Callable[[int, int], Awaitable[list[ChatLine]]]  # (limit, end): the last limit visible before end
ReadByIds = Callable[[Sequence[str]], Awaitable[list[ChatLine]]]


@dataclass
class _Kept:
    version: int
    count: int
    window: list[ChatLine]  # the last visible live messages before ``count``, oldest first
    whole: bool  # the window holds every visible live message before ``count``
    by_id: set[str] = field(default_factory=set)  # its message ids in ConversationMessages._lines


class ConversationMessages:
    def __init__(self, size: int = CONVERSATIONS, lines: int = LINES) -> None:
        self._size = size
        self._kept: OrderedDict[Key, _Kept] = OrderedDict()
        self._lines_size = lines
        self._lines: OrderedDict[tuple[Key, str], ChatLine] = OrderedDict()

    def _drop(self, key: Key) -> None:
        kept = self._kept.pop(key, None)
        if kept is not None:
            for message_id in kept.by_id:
                del self._lines[key, message_id]

    def _valid(self, key: Key, state: ConversationState | None) -> _Kept | None:
        """What is kept of the conversation, if only new messages were written since (see the module)."""
        kept = self._kept.get(key)
        if kept is None:
            return None
        moved = state.version - kept.version if state is not None else -1
        if state is None or moved < 0 or moved != state.message_count - kept.count:
            self._drop(key)
            return None
        self._kept.move_to_end(key)
        return kept

    def _keep(self, key: Key, kept: _Kept) -> None:
        self._kept[key] = kept
        self._kept.move_to_end(key)
        while len(self._kept) > self._size:
            self._drop(next(iter(self._kept)))

    def _keep_line(self, key: Key, kept: _Kept, line: ChatLine) -> None:
        self._lines[key, line.message_id] = line
        self._lines.move_to_end((key, line.message_id))
        kept.by_id.add(line.message_id)
        while len(self._lines) > self._lines_size:
            (old_key, old_id), _ = self._lines.popitem(last=False)
            self._kept[old_key].by_id.discard(old_id)

    async def recent(
        self, key: Key, state: ConversationState | None, limit: int, read_range: ReadRange, read_recent: ReadRecent
    ) -> list[ChatLine]:
        """The last ``limit`` visible live messages of the conversation as ``state`` says it is."""
        if state is None:
            self._drop(key)
            return []
        kept = self._valid(key, state)
        if kept is not None and (kept.whole or len(kept.window) >= limit):
            new = await read_range(kept.count, state.message_count) if state.message_count > kept.count else []
            window = [*kept.window, *new]
            lines = window[-limit:]
            whole = kept.whole and len(window) <= limit  # still every visible message, none cut off
            self._keep(key, _Kept(state.version, state.message_count, lines, whole, kept.by_id))
            return lines
        lines = await read_recent(limit, state.message_count)
        by_id = kept.by_id if kept is not None else set()
        self._keep(key, _Kept(state.version, state.message_count, lines, len(lines) < limit, by_id))
        return lines

    async def by_ids(
        self, key: Key, state: ConversationState | None, message_ids: Sequence[str], read: ReadByIds
    ) -> list[ChatLine]:
        """Those of the messages that are live and visible, in index order; the ones kept are not read again."""
        kept = self._valid(key, state)
        if kept is None:
            return await read(message_ids)
        window = {line.message_id: line for line in kept.window}
        wanted = list(dict.fromkeys(message_ids))
        known: dict[str, ChatLine] = {}
        for m in wanted:
            line = window.get(m)
            if line is None and m in kept.by_id:
                line = self._lines[key, m]
                self._lines.move_to_end((key, m))
            if line is not None:
                known[m] = line
        missing = [m for m in wanted if m not in known]
        found = await read(missing) if missing else []
        if self._kept.get(key) is kept:  # still valid after the read (another request may have dropped it)
            for line in found:
                self._keep_line(key, kept, line)
        return sorted([*known.values(), *found], key=lambda line: line.index)
