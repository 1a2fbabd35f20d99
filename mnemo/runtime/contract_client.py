"""The `mnemo` commands' way into a running deployment: the public contract over NATS, nothing else.

``contract_call`` validates the request with the contract's model (so a bad flag is reported before anything
is sent), sends it on its subject and returns the reply; an ``ErrorReply`` raises :class:`ContractError`
with its code. The dead-letter commands read and redrive the ``MNEMO_DLQ`` JetStream stream.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from pydantic import BaseModel

from mnemo.shared import natsconn
from mnemo.shared.settings import Settings


class ContractError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message = code, message


@contextlib.asynccontextmanager
async def connected(settings: Settings) -> AsyncIterator[NatsClient]:
    try:  # as ``MNEMO_NATS__USER`` with its password and TLS when set (a secured deployment: usually ``admin``)
        # max_reconnect_attempts=1, not 0: nats-py's first connect retries a server forever unless the limit is
        # positive, so with 0 a command against an unreachable NATS hung instead of saying so.
        nc = await natsconn.connect(
            settings, "admin", name="mnemo-cli", connect_timeout=5, max_reconnect_attempts=1, allow_reconnect=False
        )
    except Exception as exc:
        raise ContractError("unavailable", f"cannot connect to NATS at {settings.nats_url}: {exc}") from exc
    try:
        yield nc
    finally:
        with contextlib.suppress(Exception):
            await nc.drain()


async def contract_call(nc: NatsClient, subject: str, request: BaseModel, wait_s: float = 60.0) -> dict[str, Any]:
    body = request.model_dump_json(exclude_unset=True).encode()
    try:
        msg = await nc.request(subject, body, timeout=wait_s)
    except NoRespondersError as exc:
        raise ContractError("unavailable", f"no service answers {subject}: is the stack running?") from exc
    except (NatsTimeout, TimeoutError) as exc:
        raise ContractError("timeout", f"no reply on {subject} within {wait_s:.0f}s") from exc
    reply: dict[str, Any] = json.loads(msg.data)
    error = reply.get("error")
    if isinstance(error, dict) and set(reply) == {"error"}:
        raise ContractError(str(error.get("code")), str(error.get("message")))
    return reply
