"""The context as of an earlier message (``as_of_message_id``; the workbench's Context view replays one).

The picked message ``M`` is read from the conversation (the tenant's, the user's, that conversation's: an id
of another conversation or tenant finds nothing, and the request gets ``not_found``, never someone's data).
Then every part is restricted to what the log held up to and including ``M``:

- the history is the window ending with ``M`` (message *index*, the conversation's own order);
- retrieved messages: this conversation's, at or before ``M``'s index;
- summaries and legacy memories: those whose covered messages all precede or are ``M``: in ``M``'s conversation
  by index (``last_index``), in the user's other conversations by message time (``end_at``, the time of the last
  message they cover);
- facts: learned at or before ``M``'s time (``learned_at`` is the time of the message a fact was learned from,
  or when it was added by hand), filtered before supersession;
- the memory API's memories: ``occurred_at`` at or before ``M``'s time;
- recency and relative dates ("yesterday") are measured from ``M``'s time, not the clock;
- lore: the books as attached now, activated on that history; the timed effects (sticky, cooldown) as the log
  recorded them before that turn, and nothing is recorded (a replay changes no state).

Why message times and positions, not when each derived item was recorded: the log's record times say when a
worker happened to run (a summary of messages 1-10 may be written an hour after message 10, an import
records a year of chat in a minute), while message times and indexes are the conversation's own clock, the
same on every replay. So an item counts as known at ``M`` when everything it was made from precedes ``M``.
What this cannot show: facts and summaries retired, edited or consolidated since (the read models keep their
current state, not their history); those are shown as they are now, or not at all.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime

from mnemo.services.context_assembler.gather.port import ContextReads, LegacyText, SummaryText
from mnemo.services.context_assembler.items import ChatLine
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import Range, VectorFilter
from mnemo_client.wire.contract import ContextAssembleRequest


class UnknownMessage(LookupError):
    """``as_of_message_id`` is not a live message of the request's conversation (the reply: ``not_found``)."""


def utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


@dataclass(frozen=True)
class AsOf:
    """The picked message: where the context is cut (see the module)."""

    conversation_id: str
    message_id: str
    index: int
    at: datetime  # the message's time (UTC)
    persona_id: str | None = None  # the persona that wrote it (user messages)

    @property
    def epoch(self) -> float:
        return utc(self.at).timestamp()

    def holds_line(self, line: ChatLine) -> bool:
        return line.index <= self.index

    def holds_summary(self, s: SummaryText) -> bool:
        if s.end_at is None:  # no time known: not shown rather than maybe from the future
            return False
        if s.conversation_id == self.conversation_id:
            return s.last_index <= self.index
        return utc(s.end_at) <= utc(self.at)

    def holds_legacy(self, m: LegacyText) -> bool:
        return m.end_at is not None and utc(m.end_at) <= utc(self.at)

    def holds_time(self, at: datetime) -> bool:
        return utc(at) <= utc(self.at)

    def until(self, flt: VectorFilter) -> VectorFilter:
        """``flt`` narrowed, inside the vector query, to points at or before ``M``'s time, so later messages
        and summaries do not take the slots of those the read-back keeps."""
        return flt.and_(Range(vp.CREATED_AT, lte=self.epoch))


def until(flt: VectorFilter, as_of: AsOf | None) -> VectorFilter:
    return flt if as_of is None else as_of.until(flt)


async def picked(reads: ContextReads, req: ContextAssembleRequest, timeout_s: float) -> AsOf | None:
    """The request's picked message (None: a context of now), read under ``timeout_s``. Unlike a part it cannot
    be left out (a context of now would be a wrong answer): a failed read fails the request, an id the
    conversation does not hold raises :class:`UnknownMessage`."""
    if req.as_of_message_id is None:
        return None
    found = await asyncio.wait_for(
        reads.message_at(req.tenant_id, req.user_id, req.conversation_id, req.as_of_message_id), timeout_s
    )
    if found is None:
        raise UnknownMessage(f"conversation {req.conversation_id} holds no message {req.as_of_message_id}")
    return found
