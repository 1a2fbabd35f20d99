"""``SyncMnemoClient``: the same surface for code without an event loop (Flask, Django, scripts).

nats-py is asyncio-only, so the client runs ``MnemoClient`` on an event loop in a daemon thread of its own
and each method waits for its result; ``submit`` returns at once and the background sender keeps publishing.
Safe to call from several threads.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

from nats.js.api import PubAck
from pydantic import BaseModel

from mnemo_client.client import DEFAULT_URL, ChatEvent, MnemoClient
from mnemo_client.wire.chat_import_contract import ChatImportReply
from mnemo_client.wire.contract import ContextAssembleReply
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

T = TypeVar("T")


class SyncMnemoClient:
    """Connects on construction; ``close()`` (or ``with``) flushes buffered events and stops the thread."""

    def __init__(self, servers: str | Sequence[str] = DEFAULT_URL, **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mnemo-client", daemon=True)
        self._thread.start()
        try:
            self._client = self._run(MnemoClient.connect(servers, **options))
        except BaseException:
            self._stop_loop()
            raise

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def close(self, flush_timeout: float | None = 30.0) -> None:
        if self._loop.is_closed():
            return
        try:
            self._run(self._client.close(flush_timeout))
        finally:
            self._stop_loop()

    def __enter__(self) -> SyncMnemoClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def publish(self, event: ChatEvent, *, give_up_after: float | None = 60.0) -> PubAck:
        return self._run(self._client.publish(event, give_up_after=give_up_after))

    def submit(self, event: ChatEvent) -> None:
        async def submit() -> None:
            self._client.submit(event)

        self._run(submit())

    def flush(self, timeout: float | None = None) -> None:
        self._run(asyncio.wait_for(self._client.flush(), timeout))

    @property
    def buffered(self) -> int:
        return self._client.buffered

    def request(self, name: str, request: BaseModel | Mapping[str, Any]) -> BaseModel:
        return self._run(self._client.request(name, request))

    def context(
        self, tenant_id: str, user_id: str, conversation_id: str, bot_id: str, **options: Any
    ) -> ContextAssembleReply:
        return self._run(self._client.context(tenant_id, user_id, conversation_id, bot_id, **options))

    def lore_import(self, request: BaseModel | None = None, /, **fields: Any) -> LoreImportReply:
        return self._run(self._client.lore_import(request, **fields))

    def lore_export(self, request: BaseModel | None = None, /, **fields: Any) -> LoreExportReply:
        return self._run(self._client.lore_export(request, **fields))

    def lore_attach(self, request: BaseModel | None = None, /, **fields: Any) -> LoreAttachReply:
        return self._run(self._client.lore_attach(request, **fields))

    def lore_detach(self, request: BaseModel | None = None, /, **fields: Any) -> LoreDetachReply:
        return self._run(self._client.lore_detach(request, **fields))

    def lore_book_create(self, request: BaseModel | None = None, /, **fields: Any) -> LoreBookCreateReply:
        return self._run(self._client.lore_book_create(request, **fields))

    def lore_book_rename(self, request: BaseModel | None = None, /, **fields: Any) -> LoreBookRenameReply:
        return self._run(self._client.lore_book_rename(request, **fields))

    def lore_book_delete(self, request: BaseModel | None = None, /, **fields: Any) -> LoreDeleteReply:
        return self._run(self._client.lore_book_delete(request, **fields))

    def lore_entry_create(self, request: BaseModel | None = None, /, **fields: Any) -> LoreEntryReply:
        return self._run(self._client.lore_entry_create(request, **fields))

    def lore_entry_update(self, request: BaseModel | None = None, /, **fields: Any) -> LoreEntryReply:
        return self._run(self._client.lore_entry_update(request, **fields))

    def lore_entry_delete(self, request: BaseModel | None = None, /, **fields: Any) -> LoreDeleteReply:
        return self._run(self._client.lore_entry_delete(request, **fields))

    def memories_list(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryListReply:
        return self._run(self._client.memories_list(request, **fields))

    def memory_convert_to_lore(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryConvertToLoreReply:
        return self._run(self._client.memory_convert_to_lore(request, **fields))

    def memory_delete(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryDeleteReply:
        return self._run(self._client.memory_delete(request, **fields))

    def memory_edit(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryEditReply:
        return self._run(self._client.memory_edit(request, **fields))

    def knowledge_promote(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryScopeReply:
        return self._run(self._client.knowledge_promote(request, **fields))

    def knowledge_unpromote(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryScopeReply:
        return self._run(self._client.knowledge_unpromote(request, **fields))

    def remember(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryRememberReply:
        return self._run(self._client.remember(request, **fields))

    def search_memories(self, request: BaseModel | None = None, /, **fields: Any) -> MemorySearchReply:
        return self._run(self._client.search_memories(request, **fields))

    def update_memory(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryUpdateReply:
        return self._run(self._client.update_memory(request, **fields))

    def forget_memory(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryForgetReply:
        return self._run(self._client.forget_memory(request, **fields))

    def memory_history(self, request: BaseModel | None = None, /, **fields: Any) -> MemoryHistoryReply:
        return self._run(self._client.memory_history(request, **fields))

    def chat_import(self, request: BaseModel | None = None, /, **fields: Any) -> ChatImportReply:
        return self._run(self._client.chat_import(request, **fields))
