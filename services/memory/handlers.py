"""Request-reply handlers of the memory service: decode, call ``Memories``, map failures to ``ErrorReply``.

Contract: ``mnemo.rpc.memory.{convert_to_lore,delete,list}.v1`` (see ``shared.events.memory_contract``).
Bodies are taken as raw bytes so that invalid JSON still gets an answer. Every request gets a reply: the
reply model, or ``ErrorReply`` with ``bad_request`` (invalid JSON, unknown fields or a schema violation,
saying what is wrong), ``not_found`` (no such memory for that tenant and user: another user's or tenant's
memory is indistinguishable from an unknown one) or ``internal``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from services.memory.memories import NotFound
from shared import rpc
from shared.events.contract import ErrorReply
from shared.events.memory_contract import MemoryConvertToLoreRequest, MemoryDeleteRequest, MemoryListRequest

Req = TypeVar("Req", bound=BaseModel)
Rep = TypeVar("Rep", bound=BaseModel)


class StrictConvert(MemoryConvertToLoreRequest):
    model_config = ConfigDict(extra="forbid")


class StrictDelete(MemoryDeleteRequest):
    model_config = ConfigDict(extra="forbid")


class StrictList(MemoryListRequest):
    model_config = ConfigDict(extra="forbid")


async def answer(model: type[Req], body: bytes, call: Callable[[Req], Awaitable[Rep]]) -> Rep | ErrorReply:
    return await rpc.answer(model, body, call, errors={NotFound: "not_found"}, service="memory")
