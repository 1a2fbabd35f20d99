"""``mnemo.rpc.chat.import.v1``: one exported chat file, sent by a platform over NATS or HTTP, published as chat
events through the public contract, as ``mnemo import-chats`` does from a terminal.

The reply comes once JetStream has acknowledged every event, with what was imported and each line left out and
why. A text that is no chat file, an unknown zone or a conversation id too long is ``bad_request`` before
anything is published; JetStream not acknowledging an event in time is ``unavailable``, saying how many were
acknowledged before (sending the file again records nothing twice: every id comes from the file).
"""

from __future__ import annotations

from nats.aio.client import Client as NatsClient

from mnemo.services.memory.chat_import.detect import parse_chat
from mnemo.services.memory.chat_import.formats import ChatFormatError, ParsedChat, zone_of
from mnemo.services.memory.chat_import.plan import ImportPlan, ImportTarget, PublishReport, plan_import, publish_events
from mnemo_client import MnemoClient
from mnemo_client.errors import MnemoError
from mnemo_client.wire.chat_import_contract import (
    MAX_PROBLEMS,
    ChatImportProblem,
    ChatImportReply,
    ChatImportRequest,
)
from mnemo_client.wire.contract import MessageCreated


class ChatImportRefused(ValueError):
    """The request cannot be imported as it is (``bad_request``); the message says why."""


class ChatImportUnavailable(RuntimeError):
    """JetStream did not acknowledge an event in time (``unavailable``)."""


def read_request(req: ChatImportRequest) -> tuple[ParsedChat, ImportPlan]:
    """The file read and its events planned; ``ChatImportRefused`` for what no import of it could fix."""
    try:
        zone = zone_of(req.timezone)
        chat = parse_chat(
            req.content, req.format, zone, include_hidden=req.include_hidden, started_at=req.started_at,
            character_name=req.character_name,
        )  # fmt: skip
        target = ImportTarget(
            tenant_id=req.tenant_id, user_id=req.user_id, conversation_id=req.conversation_id, bots=req.bots,
            bot_id=req.bot_id, persona_id=req.persona_id, with_profiles=req.with_profiles,
        )  # fmt: skip
        return chat, plan_import(chat, target)
    except (ChatFormatError, ValueError) as exc:
        raise ChatImportRefused(str(exc)) from None


def reply_of(
    req: ChatImportRequest, chat: ParsedChat, plan: ImportPlan, report: PublishReport | None
) -> ChatImportReply:
    times = [e.created_at for e in plan.events if isinstance(e, MessageCreated)]
    skipped = {**chat.skipped, "swipe alternatives": sum(m.alternatives for m in chat.messages)}
    return ChatImportReply(
        conversation_id=plan.conversation_id,
        format=chat.format,
        messages=len(times),
        events=len(plan.events),
        already_stored=report.duplicates if report else 0,
        first_message_at=min(times) if times else None,
        last_message_at=max(times) if times else None,
        skipped={why: n for why, n in skipped.items() if n},
        problems=[ChatImportProblem(line=p.line, reason=p.reason) for p in plan.problems[:MAX_PROBLEMS]],
        problems_total=len(plan.problems),
        dry_run=req.dry_run,
    )


class ChatImports:
    """Answers ``chat.import`` on the service's NATS connection (the publisher of the chat events)."""

    def __init__(self, nc: NatsClient | None) -> None:
        self._nc = nc

    async def handle(self, req: ChatImportRequest) -> ChatImportReply:
        chat, plan = read_request(req)
        if req.dry_run:
            return reply_of(req, chat, plan, None)
        if self._nc is None:
            raise ChatImportUnavailable("this memory service has no NATS connection to publish chat events on")
        client = MnemoClient(self._nc)
        acknowledged = 0

        def advance() -> None:
            nonlocal acknowledged
            acknowledged += 1

        try:
            report = await publish_events(client, plan.events, advance)
        except MnemoError as exc:
            raise ChatImportUnavailable(
                f"stopped after {acknowledged} of {len(plan.events)} event(s): {exc}; send the file again"
            ) from None
        finally:
            await client.close(flush_timeout=0)
        return reply_of(req, chat, plan, report)
