"""Typed client for mnemo's public NATS contract: ``MnemoClient`` (asyncio) and ``SyncMnemoClient``.

The request, reply and event models are re-exported from ``mnemo_client.wire`` (generated from mnemo's
contract registry); errors are ``MnemoError`` subclasses carrying the contract's error code.
"""

from mnemo_client.client import ChatEvent, MnemoClient, nats_msg_id
from mnemo_client.errors import (
    BadRequest,
    BufferFull,
    Conflict,
    Forbidden,
    Internal,
    MnemoError,
    NotFound,
    Unavailable,
)
from mnemo_client.sync import SyncMnemoClient
from mnemo_client.wire import *  # noqa: F403 - the contract's models are the client's public types
from mnemo_client.wire import __all__ as _models

__all__ = [
    "BadRequest",
    "BufferFull",
    "ChatEvent",
    "Conflict",
    "Forbidden",
    "Internal",
    "MnemoClient",
    "MnemoError",
    "NotFound",
    "SyncMnemoClient",
    "Unavailable",
    "nats_msg_id",
    *_models,
]
