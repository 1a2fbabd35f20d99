"""Errors as exceptions carrying the contract's error code (``bad_request``, ``not_found``, ``forbidden``,
``conflict``, ``internal``, ``unavailable``): ``except NotFound`` or ``except MnemoError as e: e.code``."""

from __future__ import annotations


class MnemoError(Exception):
    """mnemo answered a request with ``ErrorReply``, or no service answered (``unavailable``)."""

    def __init__(self, code: str, message: str, *, subject: str = "") -> None:
        super().__init__(f"{code}: {message}" + (f" ({subject})" if subject else ""))
        self.code = code
        self.message = message
        self.subject = subject


class BadRequest(MnemoError):
    """The request is invalid; the message says what is wrong."""


class NotFound(MnemoError):
    """No such object for that tenant (and user)."""


class Forbidden(MnemoError):
    """The call may not act on that namespace (another player's, or one that takes the engine's right)."""


class Conflict(MnemoError):
    """The object changed since the version the request names (``expected_version``): read it again."""


class Internal(MnemoError):
    """The service failed; details are in its log."""


class Unavailable(MnemoError):
    """No service answered in time, or JetStream did not acknowledge a publish in time."""


class BufferFull(MnemoError):
    """The local buffer of events awaiting acknowledgement is full (``buffer_size``)."""


_BY_CODE: dict[str, type[MnemoError]] = {
    "bad_request": BadRequest,
    "not_found": NotFound,
    "forbidden": Forbidden,
    "conflict": Conflict,
    "internal": Internal,
    "unavailable": Unavailable,
}


def error_for(code: str, message: str, *, subject: str = "") -> MnemoError:
    """The exception for an error code; an unknown code (from a newer server) is a plain ``MnemoError``."""
    return _BY_CODE.get(code, MnemoError)(code, message, subject=subject)
