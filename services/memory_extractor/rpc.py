"""Request-reply glue of promotion: decode raw bytes, call ``Promotions``, map failures to ``ErrorReply``.

Every request gets a reply: the reply model, or ``ErrorReply`` with ``bad_request`` (invalid JSON, a request
breaking its schema, or a change the fact's state does not allow, with the reason), ``not_found`` (no such
fact for that tenant and user) or ``internal``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from services.memory_extractor.promotion import NotAllowed, NotFound
from shared.events.contract import ErrorBody, ErrorReply
from shared.events.memory_contract import MemoryPromoteRequest, MemoryUnpromoteRequest

log = logging.getLogger(__name__)
Req = TypeVar("Req", bound=BaseModel)
Rep = TypeVar("Rep", bound=BaseModel)


class StrictPromote(MemoryPromoteRequest):
    model_config = ConfigDict(extra="forbid")


class StrictUnpromote(MemoryUnpromoteRequest):
    model_config = ConfigDict(extra="forbid")


def error(code: str, message: str) -> ErrorReply:
    return ErrorReply(error=ErrorBody(code=code, message=message[:2000]))


async def answer(model: type[Req], body: bytes, call: Callable[[Req], Awaitable[Rep]]) -> Rep | ErrorReply:
    try:
        request = model.model_validate_json(body)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '<body>'}: {e['msg']}" for e in exc.errors()[:10])
        return error("bad_request", problems)
    try:
        return await call(request)
    except NotFound as exc:
        return error("not_found", str(exc))
    except NotAllowed as exc:
        return error("bad_request", str(exc))
    except Exception:  # the caller gets an answer in every case
        log.exception("memory request failed (%s)", model.__name__)
        return error("internal", "memory request failed; see the service log")
