"""Request-reply handlers of the lore service: decode, call ``LoreBooks``, map failures to ``ErrorReply``.

Contract: ``mnemo.rpc.lore.{import,export,attach,detach}.v1``, ``mnemo.rpc.lore.book.{create,delete}.v1`` and
``mnemo.rpc.lore.entry.{create,update,delete}.v1`` (see ``shared.events.lore_contract``). Bodies are taken
as raw bytes so that invalid JSON still gets an answer. Every request gets a reply: the reply model, or
``ErrorReply`` with ``bad_request`` (invalid request, or a file that is not a readable lorebook, with what is
wrong), ``not_found`` (no such book in the tenant, or not the acting user's) or ``internal``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from services.lore.books import BadRequest, NotFound
from shared.events.contract import ErrorBody, ErrorReply
from shared.events.lore_contract import (
    LoreAttachRequest,
    LoreBookCreateRequest,
    LoreBookDeleteRequest,
    LoreDetachRequest,
    LoreEntryCreateRequest,
    LoreEntryDeleteRequest,
    LoreEntryUpdateRequest,
    LoreExportRequest,
    LoreImportRequest,
)
from shared.lore.convert import LoreImportError

log = logging.getLogger(__name__)
Req = TypeVar("Req", bound=BaseModel)
Rep = TypeVar("Rep", bound=BaseModel)


class StrictImport(LoreImportRequest):
    model_config = ConfigDict(extra="forbid")


class StrictExport(LoreExportRequest):
    model_config = ConfigDict(extra="forbid")


class StrictAttach(LoreAttachRequest):
    model_config = ConfigDict(extra="forbid")


class StrictDetach(LoreDetachRequest):
    model_config = ConfigDict(extra="forbid")


class StrictBookCreate(LoreBookCreateRequest):
    model_config = ConfigDict(extra="forbid")


class StrictBookDelete(LoreBookDeleteRequest):
    model_config = ConfigDict(extra="forbid")


class StrictEntryCreate(LoreEntryCreateRequest):
    model_config = ConfigDict(extra="forbid")


class StrictEntryUpdate(LoreEntryUpdateRequest):
    model_config = ConfigDict(extra="forbid")


class StrictEntryDelete(LoreEntryDeleteRequest):
    model_config = ConfigDict(extra="forbid")


def error(code: str, message: str) -> ErrorReply:
    return ErrorReply(error=ErrorBody(code=code, message=message[:2000]))


def parse(model: type[Req], body: bytes) -> Req | ErrorReply:
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '<body>'}: {e['msg']}" for e in exc.errors()[:10])
        return error("bad_request", problems)


async def answer(model: type[Req], body: bytes, call: Callable[[Req], Awaitable[Rep]]) -> Rep | ErrorReply:
    request = parse(model, body)
    if isinstance(request, ErrorReply):
        return request
    try:
        return await call(request)
    except LoreImportError as exc:
        return error("bad_request", f"{type(exc).__name__}: {exc}")
    except BadRequest as exc:
        return error("bad_request", str(exc))
    except NotFound as exc:
        return error("not_found", str(exc))
    except Exception:  # the caller gets an answer in every case
        log.exception("lore request failed (%s)", model.__name__)
        return error("internal", "lore request failed; see the service log")
