"""Public wire contract v1 of ``mnemo.rpc.chat.import.v1``: an existing chat history brought in over NATS or HTTP.

The request carries one exported chat file's text (a SillyTavern chat JSONL, or the chat export of Agnaistic, RisuAI
or oobabooga's text-generation-webui, told apart by their shapes); the service reads it, publishes
its messages as ``message.created`` chat events with the file's own times, and replies when JetStream has
acknowledged every one (or at once with ``dry_run``). Every id is derived from the file, so the same file sent
again records nothing twice, and the same chat grown by new messages records the new ones alone. A line that is
not a message is listed in ``problems`` with its number and reason while the rest is imported; a text that is
no chat file at all is ``bad_request`` and nothing is published. ``mnemo import-chats`` reads the same formats
(docs/import.md).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from mnemo_client.wire.contract import Id, Moment, _Tenanted, _Wire

#: The deployment's NATS messages are at most 8 MB (``max_payload``); the JSON of a file's text is a bit larger.
MAX_CHAT_FILE = 6_000_000
MAX_PROBLEMS = 200
#: ``auto`` tells the formats apart by their shape (docs/import.md); the others name one.
ChatFormat = Literal["auto", "sillytavern", "agnai", "risuai", "oobabooga"]


class ChatImportRequest(_Tenanted):
    """`mnemo.rpc.chat.import.v1` request: one chat file of ``user_id``, imported as one conversation."""

    user_id: Id = Field(..., description="the user the conversation belongs to")
    content: str = Field(..., min_length=1, max_length=MAX_CHAT_FILE, description="the chat file's text")
    format: ChatFormat = Field(
        "auto",
        description="the file's format: `sillytavern` (chat JSONL), `agnai` (Agnaistic's chat export), `risuai` "
        "(RisuAI's `risuChat` export), `oobabooga` (text-generation-webui's chat history JSON), or `auto` (told "
        "apart by their shapes)",
    )
    started_at: Moment | None = Field(
        None,
        description="when the chat began, for messages the file gives no time (Agnaistic's exports give none): "
        "each is placed one second after the message before it, the first at this time (without a zone: in "
        "`timezone`)",
    )
    character_name: str | None = Field(
        None, min_length=1, max_length=512,
        description="the character's name, for formats that do not carry it (Agnaistic, RisuAI, oobabooga); "
        "default `Character`",
    )  # fmt: skip
    conversation_id: str | None = Field(
        None, min_length=1, max_length=200, description="the conversation id (default: derived from the file)"
    )
    bot_id: Id | None = Field(None, description="the bot of every character not named in `bots`")
    bots: dict[str, Id] = Field(default_factory=dict, description="a character's name in the file -> its bot id")
    persona_id: Id | None = Field(None, description="the user's persona: the author of the user's messages")
    timezone: str = Field("UTC", max_length=64, description="the IANA zone of times written without one")
    include_hidden: bool = Field(False, description="also import messages hidden from the model (`is_system`)")
    with_profiles: bool = Field(False, description="also publish each bot (and the persona) named as in the file")
    dry_run: bool = Field(False, description="read and check the file, publish nothing")


class ChatImportProblem(_Wire):
    line: int = Field(..., description="the line of the file from 1 (in a JSON export: the message's position, from 1)")
    reason: str


class ChatImportReply(_Wire):
    """What was imported: the conversation, the events JetStream acknowledged, and what was left out and why."""

    conversation_id: str
    format: str = Field(..., description="the format read (`auto` resolved to the one found)")
    messages: int = Field(..., description="message events published (with `dry_run`: that would be)")
    events: int = Field(..., description="every event published: messages and, with `with_profiles`, profiles")
    already_stored: int = Field(0, description="events JetStream knew already (the same import within 2 minutes)")
    first_message_at: datetime | None = None
    last_message_at: datetime | None = None
    skipped: dict[str, int] = Field(
        default_factory=dict, description="left out on purpose: `hidden`, `empty`, `swipe alternatives`"
    )
    problems: list[ChatImportProblem] = Field(
        default_factory=list, description=f"lines not imported, with why (the first {MAX_PROBLEMS})"
    )
    problems_total: int = 0
    dry_run: bool = False
