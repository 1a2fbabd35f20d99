"""The error codes of the public contract: every code an ``ErrorReply`` can carry, with what it means.

Written here, by hand, once: the contract registry (``mnemo/shared/contract_registry``) names them for each
subject and the schema bundle carries them to the JavaScript client, whose copy is generated from it. Only the
standard library: the client installs alone.
"""

#: Clients raise an exception carrying the code.
ERROR_CODES: dict[str, str] = {
    "bad_request": "the request is invalid (JSON, schema, or a change the target's state does not allow); "
    "the message says what is wrong",
    "not_found": "no such object for that tenant (and user): another tenant's or user's ids look the same",
    "forbidden": "the call may not act on that namespace (another player's, or a campaign or character one "
    "without the engine's right); the message says what would allow it",
    "conflict": "the object changed since the version the request names (`expected_version`): read it again",
    "internal": "the service failed; details are in its log",
    "unavailable": "no service answered (clients report a missing responder or a timeout with this code)",
    "rate_limited": "the tenant sent more requests a second than MNEMO_LIMITS__RPC_PER_SECOND allows; retry later",
    "book_too_large": "the book has more entries or bytes than the tenant's limits (MNEMO_LIMITS__MAX_BOOK_*)",
    "too_many_books": "the bot already has MNEMO_LIMITS__MAX_BOOKS_PER_BOT books attached",
}
