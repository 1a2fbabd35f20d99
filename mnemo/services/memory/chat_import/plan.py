"""``mnemo import-chats``: an existing chat history published as mnemo chat events, through the public contract.

A parsed history (``formats.py``) becomes ``message.created`` events with the file's own times, published by
the Python client (``MnemoClient``: the keyed v2 subjects, the contract's ``Nats-Msg-Id``, each event retried until
JetStream acknowledges it), in file order, so ingest records them in that order.

Idempotent: every id is derived from the file, never from the clock or a counter. The conversation is the chat's
header (user, character, creation date; in a JSON export its id or first message; ``--conversation`` names it
instead) and each message is that conversation and its line number (``:L<n>``; in a JSON export its position,
``:M<n>``), so importing the same file twice, or the same chat grown by new messages,
records each message once (ingest skips a message id it knows, however late it comes).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import ValidationError

from mnemo.services.memory.chat_import.formats import ExportedMessage, LineProblem, ParsedChat
from mnemo_client import MnemoClient
from mnemo_client.wire.contract import BotUpserted, MessageCreated, PersonaUpserted

ImportEvent = MessageCreated | BotUpserted | PersonaUpserted
_NOT_ID = re.compile(r"[^a-z0-9]+")
MAX_CONVERSATION_ID = 200  # a message id is the conversation's and `:L<line>`, within the contract's 256


@dataclass(frozen=True)
class ImportTarget:
    """Where the history goes: whose it is, and which bot and persona ids its names stand for."""

    tenant_id: str
    user_id: str
    conversation_id: str | None = None  # default: derived from the chat's header
    bots: Mapping[str, str] = field(default_factory=dict)  # a character's name in the file -> its bot id
    bot_id: str | None = None  # every character not in ``bots`` (a one-character chat's bot)
    persona_id: str | None = None  # the user's persona, when the platform has one
    with_profiles: bool = False  # also publish a bot (and persona) profile named as in the file


@dataclass
class ImportPlan:
    conversation_id: str
    events: list[ImportEvent]
    problems: list[LineProblem]


_PREFIX = {"sillytavern": "st", "agnai": "agnai", "risuai": "risu", "oobabooga": "ooba"}


def conversation_id_of(chat: ParsedChat) -> str:
    """``st-`` and a hash of the header (a JSON export: its prefix and a hash of what tells the chat apart, its
    id or first message): the same chat file (grown or not) gives the same conversation."""
    if chat.identity is not None:
        prefix = _PREFIX.get(chat.format, chat.format)
        return f"{prefix}-" + hashlib.sha256(chat.identity.encode()).hexdigest()[:24]
    first = chat.messages[0] if chat.messages else None
    anchor = "" if chat.header.create_date or first is None else f"{first.sent_at.isoformat()}\0{first.text}"
    key = "\0".join((chat.header.user_name, chat.header.character_name, chat.header.create_date, anchor))
    return "st-" + hashlib.sha256(key.encode()).hexdigest()[:24]


def bot_id_for(name: str, target: ImportTarget) -> str:
    """The bot a character's name stands for: ``--bot NAME=ID``, else ``--bot ID``, else ``st-<name>``."""
    if name in target.bots:
        return target.bots[name]
    if target.bot_id:
        return target.bot_id
    slug = _NOT_ID.sub("-", name.lower()).strip("-")
    return f"st-{slug}" if slug else "st-" + hashlib.sha256(name.encode()).hexdigest()[:16]


def plan_import(chat: ParsedChat, target: ImportTarget) -> ImportPlan:
    """The events the history becomes, in publishing order, and the lines the contract refuses."""
    conversation = target.conversation_id or conversation_id_of(chat)
    if len(conversation) > MAX_CONVERSATION_ID:
        raise ValueError(f"a conversation id is at most {MAX_CONVERSATION_ID} characters here")
    speakers = {m.name: bot_id_for(m.name, target) for m in chat.messages if m.role == "assistant"}
    if not speakers and chat.header.character_name:
        speakers[chat.header.character_name] = bot_id_for(chat.header.character_name, target)
    scene = sorted(set(speakers.values()))
    events: list[ImportEvent] = []
    problems: list[LineProblem] = list(chat.problems)
    if target.with_profiles and chat.messages:
        events.extend(_profiles(chat, target, speakers))
    for message in chat.messages:
        try:
            events.append(_created(message, target, conversation, scene, speakers, chat.unit))
        except ValidationError as exc:
            reasons = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'message'}: {e['msg']}" for e in exc.errors())
            problems.append(LineProblem(message.line, f"refused by the contract: {reasons}"))
    problems.sort(key=lambda p: p.line)
    return ImportPlan(conversation, events, problems)


def _created(
    message: ExportedMessage, target: ImportTarget, conversation: str, scene: list[str], speakers: Mapping[str, str],
    unit: str,
) -> MessageCreated:  # fmt: skip
    author = target.persona_id if message.role == "user" else speakers.get(message.name)
    return MessageCreated(
        tenant_id=target.tenant_id,
        user_id=target.user_id,
        conversation_id=conversation,
        message_id=f"{conversation}:{'L' if unit == 'line' else 'M'}{message.line}",
        role=message.role,
        author_id=author,
        author_name=message.name,
        content=message.text,
        created_at=message.sent_at,
        bot_ids=scene,
        persona_id=target.persona_id,
    )


def _profiles(chat: ParsedChat, target: ImportTarget, speakers: Mapping[str, str]) -> list[ImportEvent]:
    # A profile as the file knows it (a name): its time is the chat's first, so the upsert is the same event on
    # every import, and the platform's own later upserts of the same bot stay the newer ones.
    first = min(m.sent_at for m in chat.messages)
    events: list[ImportEvent] = [
        BotUpserted(tenant_id=target.tenant_id, bot_id=bot, name=name, owner_user_id=target.user_id, updated_at=first)
        for name, bot in sorted(speakers.items())
    ]
    if target.persona_id and chat.header.user_name:
        events.append(
            PersonaUpserted(
                tenant_id=target.tenant_id, user_id=target.user_id, persona_id=target.persona_id,
                name=chat.header.user_name, updated_at=first,
            )
        )  # fmt: skip
    return events


@dataclass
class PublishReport:
    published: int = 0
    duplicates: int = 0  # acknowledged by JetStream as already stored (an import repeated within its window)
    first: datetime | None = None
    last: datetime | None = None


async def publish_events(
    client: MnemoClient, events: Sequence[ImportEvent], progress: Callable[[], None] = lambda: None
) -> PublishReport:
    """Publish one at a time, in order: ingest records a conversation in the order its events reach the stream,
    and a retry of an event sent beside others could land it after them. The client retries each event until
    JetStream acknowledges it (``Unavailable`` after its limit: run the import again, what was recorded is
    skipped), always with the same ``Nats-Msg-Id``. ``progress()`` after each acknowledgement."""
    report = PublishReport()
    for event in events:
        ack = await client.publish(event)
        report.published += 1
        report.duplicates += 1 if ack.duplicate else 0
        progress()
    times = [e.created_at for e in events if isinstance(e, MessageCreated)]
    report.first, report.last = (min(times), max(times)) if times else (None, None)
    return report
