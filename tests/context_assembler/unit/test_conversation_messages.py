"""What a replica keeps of a conversation's messages (gather/conversations.py) is exactly what a fresh read gives:
only new messages are read while the state moved by new messages alone; anything else reads everything again."""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.services.context_assembler.gather.conversations import ConversationMessages
from mnemo.services.context_assembler.items import ChatLine
from mnemo.shared.aggregates.conversation import ConversationState

KEY = ("t1", "u1", "c1", "bot-1")


class Chat:
    """A conversation as the read models hold it, counting what each read returns."""

    def __init__(self, n: int) -> None:
        self.texts = [f"message {i}" for i in range(n)]
        self.hidden: set[int] = set()
        self.version = n
        self.reads: list[tuple[str, int]] = []  # (kind, documents returned)

    def state(self) -> ConversationState:
        return ConversationState.initial("t1", "u1", "c1").model_copy(
            update={"version": self.version, "message_count": len(self.texts)}
        )

    def line(self, i: int) -> ChatLine:
        return ChatLine(f"m{i}", i, "user", "Mira", self.texts[i])

    def visible(self, start: int, end: int) -> list[ChatLine]:
        return [self.line(i) for i in range(start, end) if i not in self.hidden]

    async def read_range(self, start: int, end: int | None) -> list[ChatLine]:
        found = self.visible(start, len(self.texts) if end is None else end)
        self.reads.append(("range", len(found)))
        return found

    async def read_recent(self, limit: int, end: int) -> list[ChatLine]:
        found = self.visible(0, end)[-limit:]
        self.reads.append(("recent", len(found)))
        return found

    async def read_ids(self, ids: Sequence[str]) -> list[ChatLine]:
        found = [self.line(int(m[1:])) for m in ids if int(m[1:]) not in self.hidden]
        self.reads.append(("ids", len(found)))
        return found

    def add(self, text: str) -> None:
        self.texts.append(text)
        self.version += 1

    def edit(self, i: int, text: str) -> None:
        self.texts[i] = text
        self.version += 1


async def recent(kept: ConversationMessages, chat: Chat, limit: int = 5) -> list[ChatLine]:
    return await kept.recent(KEY, chat.state(), limit, chat.read_range, chat.read_recent)


async def test_a_new_message_is_the_only_one_read_and_the_window_equals_a_fresh_read() -> None:
    chat, kept = Chat(20), ConversationMessages()
    first = await recent(kept, chat)
    chat.add("message 20")
    second = await recent(kept, chat)

    assert [line.index for line in first] == [15, 16, 17, 18, 19]
    assert second == chat.visible(0, 21)[-5:]
    assert chat.reads == [("recent", 5), ("range", 1)]


async def test_an_edit_or_a_swipe_reads_the_window_again() -> None:
    chat, kept = Chat(20), ConversationMessages()
    await recent(kept, chat)
    chat.edit(18, "changed")
    chat.add("message 20")
    again = await recent(kept, chat)

    assert again == chat.visible(0, 21)[-5:]
    assert [line.content for line in again][-3] == "changed"
    assert chat.reads[-1] == ("recent", 5)


async def test_a_short_conversation_stays_whole_as_it_grows() -> None:
    chat, kept = Chat(2), ConversationMessages()
    assert len(await recent(kept, chat)) == 2
    for i in range(2, 8):
        chat.add(f"message {i}")
        assert await recent(kept, chat) == chat.visible(0, i + 1)[-5:]
    assert chat.reads[0] == ("recent", 2)
    assert all(kind == "range" for kind, _ in chat.reads[1:])


async def test_an_erased_conversation_forgets_what_was_kept() -> None:
    chat, kept = Chat(10), ConversationMessages()
    await recent(kept, chat)
    assert await kept.recent(KEY, None, 5, chat.read_range, chat.read_recent) == []
    await recent(kept, chat)
    assert chat.reads[-1] == ("recent", 5), "read again: nothing was kept past the erasure"


async def test_messages_read_by_id_are_kept_while_only_new_messages_come() -> None:
    chat, kept = Chat(30), ConversationMessages()
    await recent(kept, chat)
    first = await kept.by_ids(KEY, chat.state(), ["m3", "m27", "m4"], chat.read_ids)
    chat.add("message 30")
    again = await kept.by_ids(KEY, chat.state(), ["m4", "m3", "m8"], chat.read_ids)

    assert [line.index for line in first] == [3, 4, 27]
    assert [line.index for line in again] == [3, 4, 8]
    assert chat.reads[1:] == [("ids", 2), ("ids", 1)], "m27 came from the window, then only m8 was missing"
    chat.edit(3, "changed")
    assert (await kept.by_ids(KEY, chat.state(), ["m3"], chat.read_ids))[0].content == "changed"


async def test_each_speaking_bot_has_its_own_window() -> None:
    chat, kept = Chat(10), ConversationMessages()
    await recent(kept, chat)
    other = ("t1", "u1", "c1", "bot-2")
    await kept.recent(other, chat.state(), 5, chat.read_range, chat.read_recent)
    assert [kind for kind, _ in chat.reads] == ["recent", "recent"]


async def test_lines_read_by_id_are_bounded_across_conversations_least_recently_used_first() -> None:
    one, two = Chat(30), Chat(30)
    kept, other = ConversationMessages(lines=4), ("t1", "u1", "c2", "bot-1")
    await recent(kept, one)
    await kept.recent(other, two.state(), 5, two.read_range, two.read_recent)
    await kept.by_ids(KEY, one.state(), ["m1", "m2", "m3"], one.read_ids)
    await kept.by_ids(KEY, one.state(), ["m1"], one.read_ids)  # used again: m2 is now the oldest
    await kept.by_ids(other, two.state(), ["m1", "m2"], two.read_ids)  # 5 lines in all: m2 of c1 dropped

    reads = len(one.reads)
    assert [line.index for line in await kept.by_ids(KEY, one.state(), ["m1", "m3"], one.read_ids)] == [1, 3]
    assert len(one.reads) == reads, "m1 and m3 of c1 were still kept, nothing read"
    await kept.by_ids(KEY, one.state(), ["m2"], one.read_ids)
    assert one.reads[-1] == ("ids", 1), "m2 of c1 was the least recently used line, dropped for c2's"
    await kept.by_ids(other, two.state(), ["m1"], two.read_ids)
    assert two.reads[-1] == ("ids", 1), "c2's m1 was then the oldest line and dropped for c1's m2"


async def test_a_change_drops_only_that_conversations_lines_from_the_shared_bound() -> None:
    one, two = Chat(30), Chat(30)
    kept, other = ConversationMessages(lines=4), ("t1", "u1", "c2", "bot-1")
    await recent(kept, one)
    await kept.recent(other, two.state(), 5, two.read_range, two.read_recent)
    await kept.by_ids(KEY, one.state(), ["m1", "m2"], one.read_ids)
    await kept.by_ids(other, two.state(), ["m1", "m2"], two.read_ids)
    one.edit(1, "changed")
    lines = await kept.by_ids(KEY, one.state(), ["m1", "m2"], one.read_ids)
    assert [line.content for line in lines] == ["changed", "message 2"]
    assert one.reads[-1] == ("ids", 2)

    await recent(kept, one)  # c1 kept again from the changed state, with none of its old lines
    await kept.by_ids(KEY, one.state(), ["m3", "m4"], one.read_ids)
    reads = len(two.reads)
    await kept.by_ids(other, two.state(), ["m1", "m2"], two.read_ids)
    assert len(two.reads) == reads, "c2's lines stayed: c1's dropped lines freed their room"


async def test_an_erased_or_dropped_conversation_frees_its_lines() -> None:
    one, two = Chat(30), Chat(30)
    kept, other = ConversationMessages(size=1, lines=4), ("t1", "u1", "c2", "bot-1")
    await recent(kept, one)
    await kept.by_ids(KEY, one.state(), ["m1", "m2", "m3"], one.read_ids)
    await kept.recent(other, two.state(), 5, two.read_range, two.read_recent)  # c1 is the one too many
    await kept.by_ids(other, two.state(), ["m1", "m2", "m3", "m4"], two.read_ids)
    reads = len(two.reads)
    await kept.by_ids(other, two.state(), ["m1", "m2", "m3", "m4"], two.read_ids)
    assert len(two.reads) == reads, "all four of c2 kept: c1's three lines went with c1"
    assert await kept.recent(other, None, 5, two.read_range, two.read_recent) == []
    await kept.recent(other, two.state(), 5, two.read_range, two.read_recent)  # kept again, with no lines
    await kept.by_ids(other, two.state(), ["m1"], two.read_ids)
    assert two.reads[-1] == ("ids", 1), "m1 read again: the erasure dropped c2's lines"
