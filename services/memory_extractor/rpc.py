"""Request-reply glue of promotion: decode raw bytes, call ``Promotions``, map failures to ``ErrorReply``.

Every request gets a reply: the reply model, or ``ErrorReply`` with ``bad_request`` (invalid JSON, a request
breaking its schema, or a change the fact's state does not allow, with the reason), ``not_found`` (no such
fact for that tenant and user) or ``internal``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from services.memory_extractor.promotion import NotAllowed, NotFound
from shared import rpc
from shared.events.contract import ErrorReply
from shared.events.memory_contract import MemoryPromoteRequest, MemoryUnpromoteRequest

Req = TypeVar("Req", bound=BaseModel)
Rep = TypeVar("Rep", bound=BaseModel)


class StrictPromote(MemoryPromoteRequest):
    model_config = ConfigDict(extra="forbid")


class StrictUnpromote(MemoryUnpromoteRequest):
    model_config = ConfigDict(extra="forbid")


ERRORS: dict[type[Exception], str] = {NotFound: "not_found", NotAllowed: "bad_request"}


async def answer(model: type[Req], body: bytes, call: Callable[[Req], Awaitable[Rep]]) -> Rep | ErrorReply:
    return await rpc.answer(model, body, call, errors=ERRORS, service="memory")
