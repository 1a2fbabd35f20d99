"""Request-reply handlers of the lore service: decode, call ``LoreBooks``, map failures to ``ErrorReply``.

Contract: ``mnemo.rpc.lore.{import,export,attach,detach}.v1``, ``mnemo.rpc.lore.book.{create,delete}.v1`` and
``mnemo.rpc.lore.entry.{create,update,delete}.v1`` (see ``shared.events.lore_contract``). Bodies are taken
as raw bytes so that invalid JSON still gets an answer. Every request gets a reply: the reply model, or
``ErrorReply`` with ``bad_request`` (invalid request, or a file that is not a readable lorebook, with what is
wrong), ``not_found`` (no such book in the tenant, or not the acting user's) or ``internal``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from services.lore.books import BadRequest, NotFound
from shared import rpc
from shared.events.contract import ErrorReply
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


ERRORS: dict[type[Exception], str] = {LoreImportError: "bad_request", BadRequest: "bad_request", NotFound: "not_found"}


async def answer(model: type[Req], body: bytes, call: Callable[[Req], Awaitable[Rep]]) -> Rep | ErrorReply:
    return await rpc.answer(model, body, call, errors=ERRORS, service="lore")
