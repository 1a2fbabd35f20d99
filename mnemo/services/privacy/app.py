"""Privacy service wiring: erasure and export request-reply subscribers (``mnemo.shared.rpc.serve``).

Subjects ``mnemo.rpc.privacy.erase_user.v1``, ``mnemo.rpc.privacy.erase_tenant.v1`` and
``mnemo.rpc.privacy.export_user.v1``, each in the queue group ``mnemo_privacy``. Every request gets a reply:
the reply model, or ``ErrorReply`` with ``bad_request`` (invalid JSON or request) or ``internal``. A service of
its own rather than part of the memory service: erasure spans every read model, the vector index and the
JetStream streams, which no other service needs together. It writes vectors (deletions only).
"""

from __future__ import annotations

import functools

from faststream.nats import NatsRouter

from mnemo.services.privacy.erasure import Eraser
from mnemo.services.privacy.export import Exporter
from mnemo.shared import subjects
from mnemo.shared.bootstrap import ServiceDefinition
from mnemo.shared.deps import Deps
from mnemo.shared.limits import RateLimiter
from mnemo.shared.rpc import serve
from mnemo_client.wire.privacy_contract import EraseTenantRequest, EraseUserRequest, ExportUserRequest

SERVICE = "privacy"


def eraser_for(deps: Deps) -> Eraser:
    return Eraser(
        deps.require_tenant_rows(),
        deps.cipher,
        deps.saver,
        vectors=deps.vectors,
        js=deps.nc.jetstream() if deps.nc is not None else None,
        # Once every process's key cache expired, nothing can write rows of the erased user any more.
        resweep_after_s=deps.settings.key_cache_seconds + 5.0,
    )


def create_router(deps: Deps) -> NatsRouter:
    router = NatsRouter()
    eraser = eraser_for(deps)
    exporter = Exporter(deps.require_tenant_rows(), deps.cipher)
    limiter = RateLimiter(deps.settings.limits)  # per tenant, like every RPC (an erasure scans whole streams)
    on = functools.partial(serve, router, service=SERVICE, errors={}, limiter=limiter)
    on(subjects.PRIVACY_ERASE_USER, request=EraseUserRequest, call=eraser.erase_user)
    on(subjects.PRIVACY_ERASE_TENANT, request=EraseTenantRequest, call=eraser.erase_tenant)
    on(subjects.PRIVACY_EXPORT_USER, request=ExportUserRequest, call=exporter.export_user)
    return router


DEFINITION = ServiceDefinition(SERVICE, create_router, vectors="write")
