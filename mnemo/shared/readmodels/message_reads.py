"""The message reads of the conversation read model, stated once for its two adapters.

``MessageRange`` is the query: one conversation's messages in an index window, with the rules on deleted and
unwitnessed messages, in the two forms the adapters need (a MongoDB filter on the stored plain fields, so
nothing is decrypted before it is wanted, and a test on the flags). ``MessageReads`` holds the keyword API
services call (``message_range``, ``recent``) over the one method each adapter answers, ``messages_in``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mnemo.shared.aggregates.conversation import ConversationState
from mnemo.shared.presence import bot_may_see
from mnemo.shared.readmodels.messages import MessageView, message_doc_id


def message_wanted(deleted: bool, bot_ids: Sequence[str], *, include_deleted: bool, visible_to: str | None) -> bool:
    """Whether a message with these stored flags is read: deleted ones only with ``include_deleted``; with
    ``visible_to``, only those that bot witnessed (``mnemo.shared.presence.bot_may_see``)."""
    if deleted and not include_deleted:
        return False
    return visible_to is None or bot_may_see(visible_to, bot_ids)


@dataclass(frozen=True)
class MessageRange:
    """Messages with ``start_index <= index < end_index`` (open end when None) of one conversation; with
    ``message_ids``, only those (read by id: the primary index)."""

    tenant_id: str
    user_id: str
    conversation_id: str
    start_index: int = 0
    end_index: int | None = None
    include_deleted: bool = False
    visible_to: str | None = None
    message_ids: tuple[str, ...] | None = None

    def doc_ids(self) -> list[str]:
        """The read model's document ids of ``message_ids``, each once."""
        t, u, c = self.tenant_id, self.user_id, self.conversation_id
        return [message_doc_id(t, u, c, m) for m in dict.fromkeys(self.message_ids or ())]

    def filter(self) -> dict[str, Any]:
        bounds: dict[str, int] = {"$gte": self.start_index}
        if self.end_index is not None:
            bounds["$lt"] = self.end_index
        return {
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "conversation_id": self.conversation_id,
            "index": bounds,
        }

    def covers(self, index: int) -> bool:
        return self.start_index <= index and (self.end_index is None or index < self.end_index)

    def admits(self, deleted: bool, bot_ids: Sequence[str]) -> bool:
        return message_wanted(deleted, bot_ids, include_deleted=self.include_deleted, visible_to=self.visible_to)


class MessageReads(Protocol):
    """``message_range``, ``recent`` and ``by_ids`` over what each adapter answers: ``messages_in`` and
    ``conversation``."""

    async def conversation(self, tenant_id: str, user_id: str, conversation_id: str) -> ConversationState | None: ...

    async def messages_in(self, q: MessageRange) -> list[MessageView]:
        """The messages ``q`` admits, in index order."""
        ...

    async def message_range(
        self,
        tenant_id: str,
        user_id: str,
        conversation_id: str,
        start_index: int,
        end_index: int | None = None,
        *,
        include_deleted: bool = False,
        visible_to: str | None = None,
    ) -> list[MessageView]:
        """Messages with ``start_index <= index < end_index`` (open end when None), in index order; with
        ``visible_to``, only those that bot witnessed (``mnemo.shared.presence.bot_may_see``)."""
        q = MessageRange(tenant_id, user_id, conversation_id, start_index, end_index, include_deleted, visible_to)
        return await self.messages_in(q)

    async def recent(
        self,
        tenant_id: str,
        user_id: str,
        conversation_id: str,
        limit: int,
        *,
        before_index: int | None = None,
        visible_to: str | None = None,
    ) -> list[MessageView]:
        """The last ``limit`` messages that are not deleted (before ``before_index`` if given), oldest first;
        with ``visible_to``, the last ``limit`` that bot witnessed.

        Reads growing index windows back from the end, so the cost follows ``limit``, not the length of
        the conversation.
        """
        if limit <= 0:
            return []
        end = before_index
        if end is None:
            state = await self.conversation(tenant_id, user_id, conversation_id)
            if state is None:
                return []
            end = state.message_count
        window = limit + 8
        while True:
            start = max(0, end - window)
            found = await self.message_range(tenant_id, user_id, conversation_id, start, end, visible_to=visible_to)
            if len(found) >= limit or start == 0:
                return found[-limit:]
            window *= 4

    async def by_ids(
        self,
        tenant_id: str,
        user_id: str,
        conversation_id: str,
        message_ids: Iterable[str],
        *,
        include_deleted: bool = False,
        visible_to: str | None = None,
    ) -> list[MessageView]:
        """The given messages that exist (and are not deleted), in index order; with ``visible_to``, only
        those that bot witnessed."""
        ids = tuple(message_ids)
        q = MessageRange(tenant_id, user_id, conversation_id, 0, None, include_deleted, visible_to, ids)
        return await self.messages_in(q)
