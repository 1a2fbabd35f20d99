"""Public wire contract v1 of the conversation reads: the tenant's conversations, and one conversation's timeline.

What the workbench's Conversations view shows, and what any platform can read: for each message who was
present (the bots in the scene, the user's persona), the summaries over it with their audience, the facts
learned from it, its alternatives (swipes) and the forks made from the conversation. Read-only: a platform
changes a conversation with the chat events. A conversation of another user or tenant is ``not_found``.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from mnemo_client.wire.contract import Id, _Tenanted, _Wire

MAX_CONVERSATIONS = 200
MAX_TIMELINE = 500


class ConversationListRequest(_Tenanted):
    """`mnemo.rpc.conversation.list.v1` request: the tenant's conversations (one user's), latest message first."""

    user_id: Id | None = Field(None, description="only this user's conversations")
    limit: int = Field(50, ge=1, le=MAX_CONVERSATIONS)
    offset: int = Field(0, ge=0, le=100_000)


class Named(_Wire):
    id: str
    name: str | None = Field(None, description="the bot's or persona's name, when mnemo has its profile")


class ConversationInfo(_Wire):
    user_id: str
    conversation_id: str
    messages: int = Field(..., description="live messages (recorded minus deleted)")
    first_message_at: datetime | None = None
    last_message_at: datetime | None = None
    bots: list[Named] = Field(default_factory=list, description="every bot that was ever in the scene")
    personas: list[Named] = Field(default_factory=list, description="every persona the user played in it")
    forked_from: str | None = Field(None, description="the parent conversation, for a fork")


class ConversationListReply(_Wire):
    conversations: list[ConversationInfo]
    total: int
    offset: int
    limit: int


class ConversationTimelineRequest(_Tenanted):
    """`mnemo.rpc.conversation.timeline.v1` request: one conversation's messages from ``from_index`` on, with
    who was present, summaries over them, facts learned from them, swipes and forks."""

    user_id: Id = Field(..., description="the user who owns the conversation")
    conversation_id: Id
    from_index: int = Field(0, ge=0, description="the first message index to return")
    limit: int = Field(200, ge=1, le=MAX_TIMELINE, description="messages at most")


class Alternative(_Wire):
    """One alternative (swipe) of a message."""

    message_id: str = Field(..., description="the alternative's own id (the slot's for the original)")
    content: str
    created_at: datetime | None = None
    current: bool = Field(..., description="true for the alternative the message shows now")
    deleted: bool = False


class TimelineFact(_Wire):
    fact_id: str
    character_id: str
    text: str
    fact_type: str
    scope: str
    status: str = Field(..., description="`active`, `superseded`, `consolidated` or `retired`")
    method: str = Field(..., description="how it was learned: `llm:<model>`, `pattern`, `manual:<user>`")


class TimelineMessage(_Wire):
    message_id: str
    index: int = Field(..., description="position in the conversation, from 0")
    role: str
    author_id: str | None
    author_name: str
    content: str
    created_at: datetime
    edited_at: datetime | None = None
    deleted: bool = False
    tokens: int
    present: list[str] = Field(default_factory=list, description="bots in the scene when it was said")
    persona_id: str | None = Field(None, description="the persona the user played then")
    persona_switch: bool = Field(False, description="true when the user's persona changed at this message")
    alternatives: list[Alternative] = Field(
        default_factory=list, description="its swipes, the original first; empty when it never had one"
    )
    facts: list[TimelineFact] = Field(default_factory=list, description="facts learned from this message")


class TimelineSummary(_Wire):
    """A summary as a span over the messages it covers, with the characters it is visible to."""

    summary_id: str
    summary_type: str
    text: str
    first_index: int
    last_index: int
    audience: list[str] = Field(..., description="characters who witnessed every covered message; `*`: everyone")
    participants: list[str]
    status: str
    method: str


class Fork(_Wire):
    conversation_id: str
    parent_conversation_id: str
    fork_index: int = Field(..., description="the parent's last message index the fork kept")


class ConversationTimelineReply(_Wire):
    """`mnemo.rpc.conversation.timeline.v1` reply; ``messages`` is one page (``next_index``: the next page's
    ``from_index``, null at the end)."""

    conversation: ConversationInfo
    messages: list[TimelineMessage]
    summaries: list[TimelineSummary] = Field(..., description="live summaries overlapping the page")
    forks: list[Fork] = Field(default_factory=list, description="the fork family: parent and children")
    next_index: int | None = None
