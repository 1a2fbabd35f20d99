"""Context-assembler request handling: raw bytes in, a reply model out, never an exception.

Contract: ``mnemo.rpc.context.assemble.v1`` (core NATS request-reply, queue group shared by replicas; no
JetStream, no acks: a lost request is retried by the caller). Request ``ContextAssembleRequest``; reply
``ContextAssembleReply``, or ``ErrorReply`` with ``bad_request`` for a body that is not JSON or does not
match the schema, ``not_found`` for an ``as_of_message_id`` the conversation does not hold (``gather/as_of.py``), ``rate_limited`` for a tenant over its request rate (``mnemo.shared.limits``), and ``internal``
for an unexpected failure. Read-only, so naturally idempotent.

The request is validated strictly (unknown fields are rejected): on a versioned subject a field this version
does not know is a client bug (``max_token`` for ``max_tokens``) that silently ignoring would hide.
"""

from __future__ import annotations

import logging

from mnemo.services.context_assembler.assemble.assembly import assemble
from mnemo.services.context_assembler.gather.as_of import UnknownMessage
from mnemo.services.context_assembler.gather.gathering import Gatherer
from mnemo.shared import rpc
from mnemo.shared.limits import RateLimited, RateLimiter
from mnemo.shared.usage import USAGE
from mnemo_client.wire.contract import ContextAssembleReply, ContextAssembleRequest, ErrorReply

log = logging.getLogger(__name__)


async def answer(
    body: bytes, gatherer: Gatherer, limiter: RateLimiter | None = None
) -> ContextAssembleReply | ErrorReply:
    request = rpc.parse(rpc.strict(ContextAssembleRequest), body)
    if isinstance(request, ErrorReply):
        return request
    try:
        if limiter is not None:
            limiter.check(request.tenant_id)
    except RateLimited as exc:
        return rpc.error(exc.code, str(exc))
    try:
        reply = assemble(await gatherer.gather(request))
    except UnknownMessage as exc:  # as_of_message_id outside the conversation: said, nothing of it shown
        return rpc.error("not_found", str(exc))
    except Exception:  # the caller gets an answer in every case
        log.exception("context assembly failed for conversation %s", request.conversation_id)
        return rpc.error("internal", "context assembly failed; see the service log")
    USAGE.add(request.tenant_id, context_requests=1, context_tokens=reply.token_count)  # the usage report
    return reply
