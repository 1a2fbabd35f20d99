"""``MnemoClient``: mnemo's public contract over one NATS connection (asyncio).

Events (``publish``, ``submit``) go to JetStream on their keyed subject (``mnemo.chat.message.created.v2.<tenant>.
<conversation>``, wire/keyed.py: ingest partitions by it) with the contract's ``Nats-Msg-Id`` (wire/operations.py)
and are retried until acknowledged (see outbox.py). Requests are validated locally with the same models the
services use, sent with NATS request-reply, and their replies parsed into typed models; an ``ErrorReply``
raises the ``MnemoError`` of its code, no responder or no answer in time raises ``Unavailable``.

Each typed method takes the request model, or its fields as keywords::

    reply = await client.lore_export(tenant_id="t1", lorebook_id=book)
    reply = await client.lore_export(LoreExportRequest(tenant_id="t1", lorebook_id=book))
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import nats
import nats.errors
from nats.aio.client import Client as NATS
from nats.js.api import PubAck
from pydantic import BaseModel

from mnemo_client.errors import Unavailable, error_for
from mnemo_client.outbox import Outbox, Pending
from mnemo_client.wire.chat_import_contract import ChatImportReply
from mnemo_client.wire.contract import (
    BotUpserted,
    ContextAssembleReply,
    MessageCreated,
    MessageDeleted,
    MessageEdited,
    PersonaUpserted,
)
from mnemo_client.wire.conversation_contract import ConversationListReply, ConversationTimelineReply
from mnemo_client.wire.keyed import keyed_subject
from mnemo_client.wire.knowledge_contract import FactChangeReply, FactHistoryReply, FactListReply
from mnemo_client.wire.lore_activation_contract import LoreTestActivationReply
from mnemo_client.wire.lore_contract import (
    LoreAttachReply,
    LoreBookCreateReply,
    LoreBookRenameReply,
    LoreDeleteReply,
    LoreDetachReply,
    LoreEntryReply,
    LoreExportReply,
    LoreImportReply,
)
from mnemo_client.wire.memory_api_contract import (
    MemoryForgetReply,
    MemoryHistoryReply,
    MemoryRememberReply,
    MemorySearchReply,
    MemoryUpdateReply,
)
from mnemo_client.wire.memory_contract import (
    MemoryConvertToLoreReply,
    MemoryDeleteReply,
    MemoryEditReply,
    MemoryListReply,
    MemoryScopeReply,
)
from mnemo_client.wire.memory_index_contract import MemoryIndexStatusReply
from mnemo_client.wire.operations import OPERATIONS, Operation

ChatEvent = MessageCreated | MessageEdited | MessageDeleted | BotUpserted | PersonaUpserted
R = TypeVar("R", bound=BaseModel)
DEFAULT_URL = "nats://127.0.0.1:4222"
_EVENTS: dict[type[BaseModel], Operation] = {op.payload: op for op in OPERATIONS.values() if op.kind == "event"}


def nats_msg_id(op: Operation, body: Mapping[str, Any]) -> str:
    """The event's ``Nats-Msg-Id``: its name and the JSON values of its id fields, joined by ``:``."""
    return ":".join([op.name, *("" if body.get(f) is None else str(body[f]) for f in op.msg_id)])


class MnemoClient:
    """``request_timeout``: seconds to wait for a reply; ``ack_timeout``: for one JetStream acknowledgement;
    ``buffer_size``: events ``submit`` may hold before ``BufferFull``; ``engine``: send the memory API's writes
    on the engine's subjects (campaign and character namespaces; the NATS user must hold that right)."""

    def __init__(
        self,
        nc: NATS,
        *,
        request_timeout: float = 30.0,
        ack_timeout: float = 5.0,
        buffer_size: int = 10_000,
        owns_connection: bool = False,
        engine: bool = False,
    ) -> None:
        self._nc = nc
        self._engine = engine
        self._timeout = request_timeout
        self._outbox = Outbox(nc.jetstream(), ack_timeout=ack_timeout, buffer_size=buffer_size)
        self._owns = owns_connection

    @classmethod
    async def connect(
        cls,
        servers: str | Sequence[str] = DEFAULT_URL,
        *,
        request_timeout: float = 30.0,
        ack_timeout: float = 5.0,
        buffer_size: int = 10_000,
        engine: bool = False,
        **nats_options: Any,
    ) -> MnemoClient:
        """Connect to NATS (reconnecting forever unless ``max_reconnect_attempts`` says otherwise)."""
        nats_options.setdefault("max_reconnect_attempts", -1)
        urls = [servers] if isinstance(servers, str) else list(servers)
        nc = await nats.connect(urls, **nats_options)
        return cls(
            nc,
            request_timeout=request_timeout,
            ack_timeout=ack_timeout,
            buffer_size=buffer_size,
            owns_connection=True,
            engine=engine,
        )

    async def close(self, flush_timeout: float | None = 30.0) -> None:
        """Wait up to ``flush_timeout`` s for buffered events, then stop (and close the connection if ours)."""
        try:
            if self._outbox.buffered:
                await asyncio.wait_for(self._outbox.flush(), flush_timeout)
        finally:
            await self._outbox.close()
            if self._owns:
                await self._nc.drain()

    async def __aenter__(self) -> MnemoClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # --- events -----------------------------------------------------------------------------------------------
    def _pending(self, event: ChatEvent) -> Pending:
        op = _EVENTS.get(type(event))
        if op is None:
            raise TypeError(f"not a chat event model: {type(event).__name__}")
        body = event.model_dump(mode="json")
        subject = keyed_subject(op.keyed_subject, body) if op.keyed_subject else op.subject
        return Pending(subject, json.dumps(body).encode(), nats_msg_id(op, body))

    async def publish(self, event: ChatEvent, *, give_up_after: float | None = 60.0) -> PubAck:
        """Publish and wait for JetStream's acknowledgement, retrying; ``Unavailable`` after ``give_up_after`` s."""
        return await self._outbox.publish(self._pending(event), give_up_after=give_up_after)

    def submit(self, event: ChatEvent) -> None:
        """Buffer the event and return; it is published in order and retried until acknowledged."""
        self._outbox.submit(self._pending(event))

    async def flush(self) -> None:
        """Wait until every submitted event is acknowledged (bound it with ``asyncio.timeout``)."""
        await self._outbox.flush()

    @property
    def buffered(self) -> int:
        """Submitted events not yet acknowledged."""
        return self._outbox.buffered

    # --- request-reply ---------------------------------------------------------------------------------------
    async def request(self, name: str, request: BaseModel | Mapping[str, Any]) -> BaseModel:
        """Any request-reply operation by name (``lore.import``), e.g. one newer than this client's methods."""
        op = OPERATIONS[name]
        if op.reply is None:
            raise ValueError(f"{name} is an event: use publish")
        return await self._call(name, op.reply, request, {})

    async def _call(
        self, name: str, reply: type[R], request: BaseModel | Mapping[str, Any] | None, fields: dict[str, Any]
    ) -> R:
        op = OPERATIONS[name]
        if request is not None and fields:
            raise TypeError("give the request model or its fields, not both")
        if isinstance(request, BaseModel) and not isinstance(request, op.payload):
            raise TypeError(f"{name} takes {op.payload.__name__}, not {type(request).__name__}")
        if not isinstance(request, op.payload):
            request = op.payload.model_validate(dict(request or fields))
        data = request.model_dump_json().encode()
        try:
            msg = await self._nc.request(op.subject, data, timeout=self._timeout)
        except nats.errors.NoRespondersError:
            raise Unavailable("unavailable", "no service answers this subject", subject=op.subject) from None
        except nats.errors.TimeoutError:
            raise Unavailable("unavailable", f"no reply within {self._timeout}s", subject=op.subject) from None
        body = json.loads(msg.data)
        if isinstance(body, dict) and isinstance(body.get("error"), dict) and "error" not in reply.model_fields:
            error = body["error"]
            raise error_for(str(error.get("code")), str(error.get("message", "")), subject=op.subject)
        return reply.model_validate(body)

    async def context(
        self,
        tenant_id: str,
        user_id: str,
        conversation_id: str,
        bot_id: str,
        *,
        persona_id: str | None = None,
        campaign_id: str | None = None,
        user_message: str = "",
        max_tokens: int = 8000,
    ) -> ContextAssembleReply:
        """The prompt context for the bot's next reply: ``context`` (text), ``sections``, ``sources``,
        ``messages`` (chat-completions form), ``degraded``."""
        fields = {
            "tenant_id": tenant_id,
            "user_id": user_id,
            "conversation_id": conversation_id,
            "bot_id": bot_id,
            "persona_id": persona_id,
            "campaign_id": campaign_id,
            "user_message": user_message,
            "max_tokens": max_tokens,
        }
        return await self._call("context.assemble", ContextAssembleReply, None, fields)

    async def lore_import(self, request: BaseModel | None = None, /, **fields: Any) -> LoreImportReply:
        return await self._call("lore.import", LoreImportReply, request, fields)

    async def lore_export(self, request: BaseModel | None = None, /, **fields: Any) -> LoreExportReply:
        return await self._call("lore.export", LoreExportReply, request, fields)

    async def lore_attach(self, request: BaseModel | None = None, /, **fields: Any) -> LoreAttachReply:
        return await self._call("lore.attach", LoreAttachReply, request, fields)

    async def lore_detach(self, request: BaseModel | None = None, /, **fields: Any) -> LoreDetachReply:
        return await self._call("lore.detach", LoreDetachReply, request, fields)

    async def lore_book_create(self, request: BaseModel | None = None, /, **fields: Any) -> LoreBookCreateReply:
        return await self._call("lore.book.create", LoreBookCreateReply, request, fields)

    async def lore_book_rename(self, request: BaseModel | None = None, /, **fields: Any) -> LoreBookRenameReply:
        """Rename a book, as its owner (``lore.book.rename``)."""
        return await self._call("lore.book.rename", LoreBookRenameReply, request, fields)

    async def lore_book_delete(self, request: BaseModel | None = None, /, **fields: Any) -> LoreDeleteReply:
        return await self._call("lore.book.delete", LoreDeleteReply, request, fields)

    async def lore_entry_create(self, request: BaseModel | None = None, /, **fields: Any) -> LoreEntryReply:
        return await self._call("lore.entry.create", LoreEntryReply, request, fields)

    async def lore_entry_update(self, request: BaseModel | None = None, /, **fields: Any) -> LoreEntryReply:
        return await self._call("lore.entry.update", LoreEntryReply, request, fields)

    async def lore_entry_delete(self, request: BaseModel | None = None, /, **fields: Any) -> LoreDeleteReply:
        return await self._call("lore.entry.delete", LoreDeleteReply, request, fields)

    async def lore_test_activation(self, request: BaseModel | None = None, /, **fields: Any) -> LoreTestActivationReply:
        """Which entries a chat text fires and why, as a dry run (``lore.test_activation``)."""
        return await self._call("lore.test_activation", LoreTestActivationReply, request, fields)

    async def memories_list(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryListReply:
        return await self._call("memory.list", MemoryListReply, request, fields)

    async def memory_index_status(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryIndexStatusReply:
        """Tokens and vector status of listed items (``memory.index_status``)."""
        return await self._call("memory.index_status", MemoryIndexStatusReply, request, fields)

    async def memory_convert_to_lore(
        self, request: BaseModel | None = None, /, **fields: Any
    ) -> MemoryConvertToLoreReply:
        return await self._call("memory.convert_to_lore", MemoryConvertToLoreReply, request, fields)

    async def memory_delete(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryDeleteReply:
        return await self._call("memory.delete", MemoryDeleteReply, request, fields)

    async def memory_edit(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryEditReply:
        """Edit a memory's (a summary's) text: a new version with a new id (``memory.edit``)."""
        return await self._call("memory.edit", MemoryEditReply, request, fields)

    async def knowledge_promote(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryScopeReply:
        """Share one of the user's own facts with a campaign (``memory.promote``)."""
        return await self._call("memory.promote", MemoryScopeReply, request, fields)

    async def knowledge_unpromote(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryScopeReply:
        """Bring a promoted fact back into the player's scope (``memory.unpromote``)."""
        return await self._call("memory.unpromote", MemoryScopeReply, request, fields)

    async def conversation_list(self, request: BaseModel | None = None, /, **fields: Any) -> ConversationListReply:
        """The tenant's (or one user's) conversations, latest first (``conversation.list``)."""
        return await self._call("conversation.list", ConversationListReply, request, fields)

    async def conversation_timeline(
        self, request: BaseModel | None = None, /, **fields: Any
    ) -> ConversationTimelineReply:
        """A conversation's messages with presence, summaries, facts, swipes and forks (``conversation.timeline``)."""
        return await self._call("conversation.timeline", ConversationTimelineReply, request, fields)

    async def chat_import(self, request: BaseModel | None = None, /, **fields: Any) -> ChatImportReply:
        """One exported chat file published as chat events, once (``chat.import``). The reply waits for every
        event's acknowledgement: give a large file a longer ``request_timeout``."""
        return await self._call("chat.import", ChatImportReply, request, fields)

    async def knowledge_fact_list(self, request: BaseModel | None = None, /, **fields: Any) -> FactListReply:
        """What a character knows from this user's conversations (``knowledge.fact.list``)."""
        return await self._call("knowledge.fact.list", FactListReply, request, fields)

    async def knowledge_fact_add(self, request: BaseModel | None = None, /, **fields: Any) -> FactChangeReply:
        """Add a fact a character knows, by hand (``knowledge.fact.add``)."""
        return await self._call("knowledge.fact.add", FactChangeReply, request, fields)

    async def knowledge_fact_edit(self, request: BaseModel | None = None, /, **fields: Any) -> FactChangeReply:
        """A new version of a current fact (``knowledge.fact.edit``)."""
        return await self._call("knowledge.fact.edit", FactChangeReply, request, fields)

    async def knowledge_fact_retract(self, request: BaseModel | None = None, /, **fields: Any) -> FactChangeReply:
        """The character no longer knows this fact (``knowledge.fact.retract``)."""
        return await self._call("knowledge.fact.retract", FactChangeReply, request, fields)

    async def knowledge_fact_history(self, request: BaseModel | None = None, /, **fields: Any) -> FactHistoryReply:
        """A fact's audit trail from the log (``knowledge.fact.history``)."""
        return await self._call("knowledge.fact.history", FactHistoryReply, request, fields)

    # --- the memory API (docs/memory-api.md) -------------------------------------------------------------------
    def _memory_call(self, verb: str) -> str:
        return f"memory.engine.{verb}" if self._engine else f"memory.{verb}"

    async def remember(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryRememberReply:
        """Write a memory in ``owner_namespace`` (``memory.remember``; campaign and character ones need ``engine``)."""
        return await self._call(self._memory_call("remember"), MemoryRememberReply, request, fields)

    async def search_memories(self, request: BaseModel | None = None, /, **fields: Any) -> MemorySearchReply:
        """Ranked memories with their score's parts (``memory.search``)."""
        return await self._call("memory.search", MemorySearchReply, request, fields)

    async def update_memory(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryUpdateReply:
        """A new version of a memory (``memory.update``)."""
        return await self._call(self._memory_call("update"), MemoryUpdateReply, request, fields)

    async def forget_memory(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryForgetReply:
        """Forget a memory: rows and vectors go (``memory.forget``)."""
        return await self._call(self._memory_call("forget"), MemoryForgetReply, request, fields)

    async def memory_history(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryHistoryReply:
        """Every version of a memory from the log (``memory.history``)."""
        return await self._call(self._memory_call("history"), MemoryHistoryReply, request, fields)
